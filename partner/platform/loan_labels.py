"""The loan vocabulary of the spec in a person's words: field labels and enumeration values.

Loan data names its fields in camelCase (`postalCode`) and writes enumerations as one CamelCase
word (`PrimaryResidence`); a lender reads "ZIP code" and "Primary residence". Every place that
shows loan data to a person (the reports, the staff's pages, the lender's panel) takes its words
from here, so a field or a value is called the same everywhere.
"""

import re

# The subject property fields of the spec (`loan.property`), in the order a person reads an address.
PROPERTY_FIELD_LABELS = {
    "streetAddress": "Street address",
    "city": "City",
    "state": "State",
    "postalCode": "ZIP code",
    "county": "County",
    "loanPurposeType": "Loan purpose",
    "propertyUsageType": "Property usage",
}

# The loan's own fields (the top level of `loan`) a person sees named: in a request shown to staff,
# in the groups of a delivery's form, in the history of what was sent.
LOAN_FIELD_LABELS = {
    "loanNumber": "Loan number",
    "loanAmount": "Loan amount",
    "property": "Subject property",
    "borrower": "Borrower",
    "borrowers": "Borrowers",
    "applications": "Applications",
    "appraisal": "Appraisal",
    "loanPurposeType": "Loan purpose",
    "propertyUsageType": "Property usage",
}

# The fields whose values are enumerations of the spec (shown through `value_label`); the others
# hold plain text, such as an address, shown as written.
ENUMERATION_FIELDS = frozenset({"loanPurposeType", "propertyUsageType"})

# Values of the loan format's enumerations with a wording of their own, keyed by their letters
# alone, lower-cased: "NoCash-Out Refinance", "NoCashOutRefinance" and "NO_CASH_OUT_REFINANCE" are
# one value. The spec shows only Purchase, Refinance and PrimaryResidence; the others are the usual
# values of the same vocabulary. Any other CamelCase value is split into words (`value_label`).
_VALUE_LABELS = {
    # loanPurposeType
    "purchase": "Purchase",
    "refinance": "Refinance",
    "cashoutrefinance": "Cash-out refinance",
    "nocashoutrefinance": "No cash-out refinance",
    "constructiononly": "Construction only",
    "constructiontopermanent": "Construction to permanent",
    "mortgagemodification": "Mortgage modification",
    # propertyUsageType
    "primaryresidence": "Primary residence",
    "secondhome": "Second home",
    "investment": "Investment property",
    "investor": "Investment property",
    "investmentproperty": "Investment property",
    # both
    "other": "Other",
    "unknown": "Unknown",
}

# One CamelCase word of letters and digits, hyphens allowed ("ConstructionToPermanent", "FHA203K"):
# an enumeration value. A field name starts in lower case, plain text has spaces: neither matches.
_CAMEL_CASE = re.compile(r"[A-Z][A-Za-z0-9-]*")
# Where a CamelCase word splits: before a capital that follows a lower-case letter or a digit, and
# before the last capital of a run of capitals followed by a lower-case letter ("FHALoan").
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def value_label(value):
    """An enumeration value of the spec in words: "PrimaryResidence" -> "Primary residence".

    Known values get their own wording ("Investor" -> "Investment property"); any other CamelCase
    value is split into a sentence-case phrase ("ConstructionToPermanent" -> "Construction to
    permanent", acronyms kept: "FHAStreamline" -> "FHA streamline"). Field names, plain text (an
    address) and anything that is not text come back unchanged. Meant for enumeration values:
    a place name written in CamelCase ("McAllen") would be split too, so show a field's value
    through `property_value`, which applies this to enumeration fields only.
    """
    if not isinstance(value, str):
        return value
    known = _VALUE_LABELS.get(re.sub(r"[^a-z]", "", value.casefold()))
    if known:
        return known
    if not _CAMEL_CASE.fullmatch(value):
        return value
    words = _WORD_BOUNDARY.split(value)
    if len(words) < 2:
        return value
    rest = [word if word.isupper() else word.lower() for word in words[1:]]
    return " ".join([words[0], *rest])


def field_label(name: str) -> str:
    """A property field's label ("postalCode" -> "ZIP code"); a field the spec does not list keeps its name."""
    return PROPERTY_FIELD_LABELS.get(name, name)


def loan_field_label(name) -> str:
    """Any field of the loan in words, for staff reading a request or a delivery: the tables above
    first ("postalCode" -> "ZIP code", "loanAmount" -> "Loan amount"), any other camelCase name split
    ("appraisedValue" -> "Appraised value"); a list's position or an odd key comes back as written."""
    name = str(name)
    known = PROPERTY_FIELD_LABELS.get(name) or LOAN_FIELD_LABELS.get(name)
    if known or not name[:1].isalpha():
        return known or name
    return value_label(name[0].upper() + name[1:])


def property_value(name: str, value):
    """A property field's value as a person reads it: enumeration values in words, the rest as is."""
    return value_label(value) if name in ENUMERATION_FIELDS else value
