"""What the order form shows of a loan: the borrower's name and the subject property.

Only this summary of the origin's loan reaches the page (never the credentials, never the
whole loan).
"""

from partner.platform.loan_labels import LOAN_FIELD_LABELS, PROPERTY_FIELD_LABELS, value_label

NOT_GIVEN = "Not given"


def text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def _person_name(person) -> str:
    if not isinstance(person, dict):
        return ""
    full = text(person.get("fullName")) or text(person.get("name"))
    if full:
        return full
    parts = [text(person.get(key)) for key in ("firstName", "middleName", "lastName", "suffix")]
    return " ".join(part for part in parts if part)


def loan_borrower_name(loan: dict) -> str:
    """The borrower's name, from the shapes the loan format uses (borrower or first application)."""
    for candidate in (
        loan.get("borrower"),
        *[app.get("borrower") for app in loan.get("applications") or [] if isinstance(app, dict)],
    ):
        name = _person_name(candidate)
        if name:
            return name
    borrowers = loan.get("borrowers")
    if isinstance(borrowers, list):
        for borrower in borrowers:
            name = _person_name(borrower)
            if name:
                return name
    return ""


def _joined(parts, separator: str) -> str:
    return separator.join(part for part in parts if part)


def summary_rows(summary: dict) -> list[dict]:
    """The summary as the form shows it, in the lender's words: each row's label (the loan
    vocabulary's, `loan_labels`) and its value, "Not given" where the loan has none."""
    prop = summary["property"]
    city_line = _joined([prop["city"], _joined([prop["state"], prop["postalCode"]], " ")], ", ")
    rows = [
        (LOAN_FIELD_LABELS["borrower"], summary["borrower"]),
        (LOAN_FIELD_LABELS["property"], _joined([prop["streetAddress"], city_line], ", ")),
        (PROPERTY_FIELD_LABELS["county"], prop["county"]),
        (LOAN_FIELD_LABELS["loanPurposeType"], summary["loanPurposeLabel"]),
        (LOAN_FIELD_LABELS["propertyUsageType"], summary["propertyUsageLabel"]),
    ]
    if summary["loanNumber"]:
        rows.insert(0, (LOAN_FIELD_LABELS["loanNumber"], summary["loanNumber"]))
    return [{"label": label, "value": value or NOT_GIVEN} for label, value in rows]


def loan_summary(loan: dict) -> dict:
    """Borrower, subject property, loan purpose and usage: what the order form shows (`rows`, the
    same in the lender's words, is what the page writes)."""
    prop = loan.get("property") if isinstance(loan.get("property"), dict) else {}
    purpose = text(prop.get("loanPurposeType")) or text(loan.get("loanPurposeType"))
    usage = text(prop.get("propertyUsageType")) or text(loan.get("propertyUsageType"))
    summary = {
        "borrower": loan_borrower_name(loan),
        "loanNumber": text(loan.get("loanNumber")),
        "property": {key: text(prop.get(key)) for key in ("streetAddress", "city", "state", "postalCode", "county")},
        "loanPurposeType": purpose,
        "propertyUsageType": usage,
        # The same values in the lender's words ("Primary residence"), as the findings and the report say them.
        "loanPurposeLabel": value_label(purpose),
        "propertyUsageLabel": value_label(usage),
    }
    summary["rows"] = summary_rows(summary)
    return summary
