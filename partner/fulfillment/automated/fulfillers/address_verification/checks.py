"""The checks of an address verification: the subject property against the ZIP code's record.

The property's ZIP code (ZIP+4 accepted) is looked up in the data the `zipcodes` package ships;
city, state and county are compared with it case-insensitively and corrected where they differ.
A county that names the data source's county ("Suffolk", "SUFFOLK county") is written the data
source's way ("Suffolk County") in the corrected property and the report, without counting as a
correction. Anything the checks cannot read is a FulfillmentRefused saying what to fix.
"""

import re
from importlib.metadata import version

import zipcodes

from partner.fulfillment.automated.fulfillers.address_verification.report import AddressCheck
from partner.fulfillment.automated.fulfillers.base import FulfillmentRefused

ZIP_CODE = re.compile(r"^(?P<zip5>\d{5})(?:-?(?P<plus4>\d{4}))?$")

# The property fields this fulfiller reads; each must be text when present.
CHECKED_FIELDS = ("postalCode", "city", "state", "county")

# How the data source ends county-level names; a lender may send "Orleans" for "Orleans Parish".
# Longest first, so "city and borough" wins over "borough".
COUNTY_SUFFIXES = (
    "city and borough",
    "census area",
    "municipality",
    "municipio",
    "borough",
    "parish",
    "county",
    "city",
)


def _folded(value: str) -> str:
    return " ".join(value.split()).casefold()


def _county_matches(received: str, expected: str) -> bool:
    if _folded(received) == _folded(expected):
        return True
    folded = _folded(expected)
    for suffix in COUNTY_SUFFIXES:
        if folded.endswith(" " + suffix):
            return _folded(received) == folded[: -len(suffix) - 1]
    return False


def county_as_written(prop: dict, record: dict) -> dict:
    """`prop` with its county written as the data source writes it, when it names the same county.

    "Suffolk", "suffolk  county" and "Suffolk County" are one county: the report and the corrected
    property write it one way, and it is not a correction. Another county is left for the checks.
    """
    expected = record.get("county") or ""
    county = prop.get("county")
    if expected and isinstance(county, str) and county.strip() and _county_matches(county, expected):
        return dict(prop, county=expected)
    return prop


def data_source() -> str:
    """The data the checks read, in a lender's words (shown at the end of the report)."""
    return f"US ZIP code data (zipcodes {version('zipcodes')}): city, state and county of each ZIP code, read offline"


def subject_property(request: dict) -> dict:
    """`request.loan.property`, or FulfillmentRefused saying what is missing or malformed."""
    loan = request.get("loan") if isinstance(request, dict) else None
    if not isinstance(loan, dict):
        raise FulfillmentRefused("The transaction request carries no loan data, so there is no address to verify.")
    prop = loan.get("property")
    if not isinstance(prop, dict) or not prop:
        raise FulfillmentRefused("The loan has no subject property (loan.property), so there is no address to verify.")
    for name in CHECKED_FIELDS:
        if prop.get(name) is not None and not isinstance(prop[name], str):
            raise FulfillmentRefused(f"The subject property's {name} is not text, so the address cannot be verified.")
    return prop


def zip_record(postal_code: str | None) -> tuple[dict, str | None]:
    """The data source's record for a ZIP or ZIP+4 code, and the +4 part (None when absent)."""
    if not postal_code or not postal_code.strip():
        raise FulfillmentRefused("The subject property has no ZIP code (loan.property.postalCode) to verify.")
    shown = postal_code.strip()[:20]
    match = ZIP_CODE.match(postal_code.strip())
    if not match:
        raise FulfillmentRefused(
            f"The subject property's ZIP code {shown!r} is not a US ZIP code (expected 12345 or 12345-6789)."
        )
    records = zipcodes.matching(match["zip5"])
    if not records:
        raise FulfillmentRefused(
            f"ZIP code {match['zip5']} is not a known US ZIP code, so the address could not be verified."
        )
    return records[0], match["plus4"]


def address_checks(received: dict, record: dict, plus4: str | None) -> tuple[list[AddressCheck], dict, list[str]]:
    """Compare the property with the ZIP code's record: the checks, the corrected property, and
    the names of the corrected fields."""
    corrected = dict(received)
    changed = []
    zip_note = []
    if plus4:
        zip_note.append("ZIP+4 code; its first five digits were checked")
    if not record.get("active", True):
        zip_note.append("listed as no longer active")
    checks = [
        AddressCheck(
            name="ZIP code",
            received=received["postalCode"],
            reference=f"{record['zip_code']} {record['city']}, {record['state']}",
            outcome="found",
            note="; ".join(zip_note),
        )
    ]

    def compare(field: str, label: str, expected: str, matches) -> None:
        value = received.get(field) or ""
        if not expected:
            checks.append(
                AddressCheck(label, value, "(none)", "not checked", "the data source has no value for this ZIP code")
            )
        elif not value.strip():
            corrected[field] = expected
            changed.append(field)
            checks.append(AddressCheck(label, "(missing)", expected, "added"))
        elif matches(value, expected):
            checks.append(AddressCheck(label, value, expected, "matches"))
        else:
            corrected[field] = expected
            changed.append(field)
            checks.append(AddressCheck(label, value, expected, "corrected"))

    cities = [record["city"], *record.get("acceptable_cities", [])]
    compare("city", "City", record["city"], lambda value, _: _folded(value) in {_folded(c) for c in cities})
    compare("state", "State", record["state"], lambda value, expected: _folded(value) == _folded(expected))
    compare("county", "County", record.get("county") or "", _county_matches)
    return checks, corrected, changed


def order_notes(request: dict) -> str:
    """The lender's note from the order form (request.options.comments), shown in the report."""
    options = request.get("options")
    comments = options.get("comments") if isinstance(options, dict) else None
    # A note is a courtesy, not an input to the checks: anything but text is left out.
    return comments.strip() if isinstance(comments, str) else ""


def partner_status(changed: list[str]) -> str:
    if not changed:
        return "Address verified"
    return "Address corrected: " + ", ".join(changed)
