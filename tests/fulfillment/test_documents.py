"""The address verification PDF report: a valid PDF, the expected text, non-Latin-1 names."""

import dataclasses
import re
import zlib
from datetime import UTC, datetime

import pytest

from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller
from partner.fulfillment.automated.fulfillers.address_verification.report import (
    AddressCheck,
    AddressReport,
    address_report_pdf,
    pdf_text,
)
from partner.fulfillment.automated.fulfillers.base import partner_party

CREATED = datetime(2026, 3, 14, 9, 26, tzinfo=UTC)


def report(**overrides):
    values = {
        "transaction_id": "txn-doc-1",
        "reference_number": "AV-0123456789",
        "summary": "Address corrected: city",
        "received": {"streetAddress": "1 Main St", "city": "Oakland", "state": "CA", "postalCode": "94103"},
        "corrected": {"streetAddress": "1 Main St", "city": "San Francisco", "state": "CA", "postalCode": "94103"},
        "checks": (
            AddressCheck("ZIP code", "94103", "94103 San Francisco, CA", "found"),
            AddressCheck("City", "Oakland", "San Francisco", "corrected"),
            AddressCheck("State", "CA", "CA", "matches"),
        ),
        "data_source": "zipcodes 3.0.0 (offline)",
        "created": CREATED,
        "prepared_by": partner_party(),
    }
    values.update(overrides)
    return AddressReport(**values)


def shown_texts(pdf: bytes) -> list[str]:
    """The strings drawn with Tj in uncompressed page streams, PDF string escapes undone."""
    texts = re.findall(rb"\((.*?)(?<!\\)\) Tj", pdf)
    return [re.sub(rb"\\([()\\])", rb"\1", t).decode("latin-1") for t in texts]


def decompressed(pdf: bytes) -> bytes:
    """The PDF with its Flate streams inflated, so shown_texts can read a compressed report.

    A stream's data is taken with the end-of-line before `endstream` and inflated with a
    decompressor that leaves what follows the compressed data aside: cutting the end-of-line off
    with the pattern would also cut a compressed stream whose last byte happens to be a CR (it
    then failed to inflate, and the report read as empty about once in a hundred runs)."""
    parts = []
    for match in re.finditer(rb"stream\r?\n(.*?)endstream", pdf, re.S):
        try:
            parts.append(zlib.decompressobj().decompress(match.group(1)))
        except zlib.error:
            parts.append(match.group(1))
    return b"\n".join(parts)


def page_count(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))


def test_report_is_a_one_page_pdf():
    pdf = address_report_pdf(report())
    assert pdf.startswith(b"%PDF-")
    assert pdf.rstrip().endswith(b"%%EOF")
    assert page_count(pdf) == 1
    assert re.findall(rb"/Count (\d+)", pdf) == [b"1"]


def test_report_is_compressed_by_default():
    compressed = address_report_pdf(report())
    assert b"/FlateDecode" in compressed
    assert "Oakland" not in " ".join(shown_texts(compressed))


def test_report_shows_ids_date_property_checks_and_source():
    texts = shown_texts(address_report_pdf(report(), compress=False))
    for expected in [
        "Address verification report",
        "Keystone Property Data, Inc.",
        "100 Market Street, Suite 400",
        "San Francisco, CA 94105",
        "Transaction ID (for support): txn-doc-1",
        "Reference: AV-0123456789",
        "Date: 2026-03-14 09:26 UTC",
        "Result: Address corrected: city",
        "Subject property",
        "As sent",
        "As found",
        "Oakland",
        "San Francisco",
        "Checks",
        "ZIP code",
        "94103 San Francisco, CA",
        "corrected",
        "matches",
        "Data source",
        "zipcodes 3.0.0 (offline)",
    ]:
        assert expected in texts, expected
    # The property table says of every field whether it changed.
    assert texts.count("Yes") == 1
    assert texts.count("No") == 3


def test_same_report_renders_the_same_bytes():
    assert address_report_pdf(report()) == address_report_pdf(report())


def test_missing_values_are_shown_as_missing():
    texts = shown_texts(
        address_report_pdf(
            report(received={"postalCode": "94103"}, corrected={"postalCode": "94103", "county": "X"}), compress=False
        )
    )
    assert "(missing)" in texts


def test_long_report_breaks_onto_more_pages():
    checks = tuple(AddressCheck(f"Check {i}", "a", "b", "matches") for i in range(80))
    pdf = address_report_pdf(report(checks=checks))
    assert page_count(pdf) >= 2


def test_markup_like_text_is_drawn_literally():
    texts = shown_texts(address_report_pdf(report(transaction_id="**txn** (x) \\ y"), compress=False))
    assert "Transaction ID (for support): **txn** (x) \\ y" in texts


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("José", "José"),
        ("Zoë", "Zoë"),
        ("Łódź", "Lódz"),
        ("Nguyễn", "Nguyen"),
        ("Dvořák", "Dvorák"),
        ("O’Brien — “Lot 5”…", 'O\'Brien - "Lot 5"...'),
        ("北京", "??"),
        ("Casa 🏠", "Casa ?"),
        ("a\nb\tc\x00d", "a b cd"),
        (None, ""),
        (42, "42"),
    ],
)
def test_pdf_text_keeps_latin1_and_transliterates_the_rest(value, shown):
    assert pdf_text(value) == shown
    pdf_text(value).encode("latin-1")


def test_non_latin1_names_do_not_break_the_report():
    names = {"streetAddress": "5 Rue Zoë", "city": "José’s Łódź 北京 🏠"}
    pdf = address_report_pdf(
        report(
            received=names,
            corrected=dict(names, city="Nguyễn"),
            prepared_by=dataclasses.replace(partner_party(), name="Dvořák & Zoë"),
        ),
        compress=False,
    )
    texts = shown_texts(pdf)
    assert "5 Rue Zoë" in texts
    assert "José's Lódz ?? ?" in texts
    assert "Nguyen" in texts
    assert "Dvorák & Zoë" in texts


def test_fulfiller_report_holds_what_was_checked():
    result = AddressVerificationFulfiller().fulfill(
        transaction_id="txn-Zoë",
        request={
            "options": {"comments": "Rush – borrower Zoë Łukasz"},
            "loan": {"property": {"city": "Zoë", "state": "CA", "postalCode": "94103-0001", "county": "Alameda"}},
        },
        product={},
    )
    pdf = result.attachments[0].content
    assert pdf.startswith(b"%PDF-") and page_count(pdf) == 1
    texts = shown_texts(decompressed(pdf))
    for expected in [
        "Transaction ID (for support): txn-Zoë",
        f"Reference: {result.response['referenceNumber']}",
        "Result: Address corrected: city, county",
        "94103-0001",
        "94103 San Francisco, CA",
        "San Francisco County",
        "Alameda",
        "Order notes",
        "Rush - borrower Zoë Lukasz",
    ]:
        assert expected in texts, expected
    assert any(t.startswith("found. ZIP+4 code") for t in texts)
    assert any(t.startswith("US ZIP code data (zipcodes 3.") for t in texts)


def test_report_without_notes_has_no_notes_section():
    assert "Order notes" not in shown_texts(address_report_pdf(report(), compress=False))
