"""What the order form shows of a loan: the borrower's name and the subject property.

Only this summary of the origin's loan reaches the page (never the credentials, never the
whole loan).
"""

from partner.platform.loan_labels import value_label


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


def loan_summary(loan: dict) -> dict:
    """Borrower, subject property, loan purpose and usage: what the order form shows."""
    prop = loan.get("property") if isinstance(loan.get("property"), dict) else {}
    purpose = text(prop.get("loanPurposeType")) or text(loan.get("loanPurposeType"))
    usage = text(prop.get("propertyUsageType")) or text(loan.get("propertyUsageType"))
    return {
        "borrower": loan_borrower_name(loan),
        "loanNumber": text(loan.get("loanNumber")),
        "property": {key: text(prop.get(key)) for key in ("streetAddress", "city", "state", "postalCode", "county")},
        "loanPurposeType": purpose,
        "propertyUsageType": usage,
        # The same values in the lender's words ("Primary residence"), as the findings and the report say them.
        "loanPurposeLabel": value_label(purpose),
        "propertyUsageLabel": value_label(usage),
    }
