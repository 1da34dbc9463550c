"""The order form's loan summary: its rows in the lender's words, the same labels the reports and the
staff's pages use (`partner.platform.loan_labels`), "Not given" where the loan has no value."""

from partner.platform.loan_labels import LOAN_FIELD_LABELS
from partner.ui.loans import loan_summary

LOAN = {
    "loanNumber": "LN-7",
    "borrower": {"firstName": "Dana", "lastName": "Demo"},
    "property": {
        "streetAddress": "500 Howard Street",
        "city": "San Francisco",
        "state": "CA",
        "postalCode": "94105",
        "county": "San Francisco",
        "loanPurposeType": "Purchase",
        "propertyUsageType": "PrimaryResidence",
    },
}


def rows(loan) -> list[tuple[str, str]]:
    return [(row["label"], row["value"]) for row in loan_summary(loan)["rows"]]


def test_the_rows_name_each_field_as_every_other_page_does():
    assert rows(LOAN) == [
        ("Loan number", "LN-7"),
        ("Borrower", "Dana Demo"),
        ("Subject property", "500 Howard Street, San Francisco, CA 94105"),
        ("County", "San Francisco"),
        ("Loan purpose", "Purchase"),
        ("Property usage", "Primary residence"),
    ]
    assert rows(LOAN)[2][0] == LOAN_FIELD_LABELS["property"]


def test_a_loan_without_values_says_not_given_and_has_no_loan_number_row():
    assert rows({}) == [
        ("Borrower", "Not given"),
        ("Subject property", "Not given"),
        ("County", "Not given"),
        ("Loan purpose", "Not given"),
        ("Property usage", "Not given"),
    ]


def test_a_partial_address_joins_only_what_is_there():
    loan = {"property": {"city": "Austin", "postalCode": "78701"}}
    assert dict(rows(loan))["Subject property"] == "Austin, 78701"
