"""The address verification report as a lender reads it: its text and page, read back with pypdf.

US Letter paper, the loan's values in words, "Yes"/"No" in Changed, a county written one way, the
partner's letterhead from the settings (the logo too), and no word about how the software is built.
"""

import io
import logging
import re

import pytest
from PIL import Image
from pypdf import PdfReader

from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller

# 11901 is Riverhead, NY, in the data source's "Suffolk County".
RIVERHEAD = {
    "streetAddress": "200 Howell Avenue",
    "city": "Riverhead",
    "state": "NY",
    "postalCode": "11901",
    "county": "Suffolk County",
    "loanPurposeType": "Purchase",
    "propertyUsageType": "PrimaryResidence",
}


def fulfill(prop):
    return AddressVerificationFulfiller().fulfill(
        transaction_id="txn-report-text", request={"loan": {"property": prop}}, product={}
    )


def report_pdf(prop) -> PdfReader:
    (attachment,) = fulfill(prop).attachments
    return PdfReader(io.BytesIO(attachment.content))


def report_text(prop) -> str:
    return "\n".join(page.extract_text() for page in report_pdf(prop).pages)


def row(text: str, label: str) -> str:
    """The property table's line of one field: the label, as received, as corrected, changed."""
    lines = text.splitlines()
    table = lines[lines.index("Field As sent As found Changed") + 1 : lines.index("Checks")]
    (line,) = [line for line in table if line.startswith(label + " ")]
    return line


def images(reader: PdfReader) -> list:
    found = []
    for page in reader.pages:
        xobjects = page["/Resources"].get("/XObject") or {}
        found += [name for name, ref in xobjects.items() if ref.get_object().get("/Subtype") == "/Image"]
    return found


def test_the_report_is_on_us_letter_paper():
    for page in report_pdf(dict(RIVERHEAD)).pages:
        assert (float(page.mediabox.width), float(page.mediabox.height)) == (612, 792)


def test_fields_and_enumeration_values_are_in_words():
    text = report_text(dict(RIVERHEAD, propertyUsageType="SecondHome", loanPurposeType="NoCash-Out Refinance"))
    assert row(text, "Property usage") == "Property usage Second home Second home No"
    assert row(text, "Loan purpose") == "Loan purpose No cash-out refinance No cash-out refinance No"
    assert "SecondHome" not in text and "NoCash-Out" not in text
    assert "ZIP code 11901 11901 No" in text
    for name in ("streetAddress", "postalCode", "loanPurposeType", "propertyUsageType"):
        assert name not in text


def test_primary_residence_is_written_as_words():
    text = report_text(dict(RIVERHEAD))
    assert "Primary residence" in text
    assert "PrimaryResidence" not in text


def test_changed_says_yes_or_no_for_every_field():
    text = report_text(dict(RIVERHEAD, city="Southampton"))
    assert row(text, "City") == "City Southampton Riverhead Yes"
    assert row(text, "State") == "State NY NY No"
    assert row(text, "Street address") == "Street address 200 Howell Avenue 200 Howell Avenue No"


@pytest.mark.parametrize("county", ["Suffolk", "suffolk", "SUFFOLK  county", "Suffolk County"])
def test_a_county_is_written_one_way(county):
    result = fulfill(dict(RIVERHEAD, county=county))
    # The same county is no correction, and comes back written as the data source writes it.
    assert result.response["partnerStatus"] == "Address verified"
    assert result.response["loan"]["property"]["county"] == "Suffolk County"
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(result.attachments[0].content)).pages)
    assert row(text, "County") == "County Suffolk County Suffolk County No"
    assert "County Suffolk County Suffolk County matches" in text
    # Every mention of the county has its suffix, in the data source's capitals.
    assert not re.search(r"suffolk(?! County)", text, re.IGNORECASE)
    assert "Suffolk" in text


def test_another_county_is_still_a_correction():
    text = report_text(dict(RIVERHEAD, county="Nassau"))
    assert row(text, "County") == "County Nassau Suffolk County Yes"


def test_letterhead_and_responding_party_come_from_the_settings(settings):
    settings.PARTNER_NAME = "Harbor Lane Title Services LLC"
    settings.PARTNER_ADDRESS = "77 Water Street, Floor 3"
    settings.PARTNER_CITY = "Boston"
    settings.PARTNER_STATE = "MA"
    settings.PARTNER_POSTAL_CODE = "02109"
    settings.PARTNER_PHONE = "617-555-0199"
    settings.PARTNER_EMAIL = "orders@harbor-lane.example"
    result = fulfill(dict(RIVERHEAD))
    reader = PdfReader(io.BytesIO(result.attachments[0].content))
    text = reader.pages[0].extract_text()
    lines = text.splitlines()
    assert lines[:4] == [
        "Harbor Lane Title Services LLC",
        "77 Water Street, Floor 3",
        "Boston, MA 02109",
        "Phone 617-555-0199 \u00b7 orders@harbor-lane.example",
    ]
    assert "Keystone" not in text
    assert reader.metadata.author == "Harbor Lane Title Services LLC"
    party = result.response["respondingParty"]
    assert (party["name"], party["address"], party["city"], party["state"], party["postalCode"]) == (
        "Harbor Lane Title Services LLC",
        "77 Water Street, Floor 3",
        "Boston",
        "MA",
        "02109",
    )
    assert party["pointOfContact"]["phone"] == "617-555-0199"
    assert party["pointOfContact"]["email"] == "orders@harbor-lane.example"


def test_the_logo_is_drawn_when_configured(settings, tmp_path):
    logo = tmp_path / "logo.png"
    Image.new("RGB", (90, 30), (20, 60, 120)).save(logo)
    settings.PARTNER_LOGO_PATH = str(logo)
    assert len(images(report_pdf(dict(RIVERHEAD)))) == 1
    settings.PARTNER_LOGO_PATH = ""
    assert images(report_pdf(dict(RIVERHEAD))) == []


@pytest.mark.parametrize("content", [None, b"not an image", b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"])
def test_an_unreadable_logo_leaves_it_out_with_a_warning(settings, tmp_path, caplog, content):
    logo = tmp_path / "logo.png"
    if content is not None:
        logo.write_bytes(content)
    settings.PARTNER_LOGO_PATH = str(logo)
    with caplog.at_level(logging.WARNING):
        reader = report_pdf(dict(RIVERHEAD))
    assert images(reader) == []
    assert "PARTNER_LOGO_PATH" in caplog.text


def test_the_data_source_is_described_for_a_lender():
    text = report_text(dict(RIVERHEAD))
    assert "Python package" not in text
    assert re.search(r"US ZIP code data \(zipcodes \d+\.\d+\.\d+\)", text)
