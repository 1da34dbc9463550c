"""The address verification report attached to the response: a PDF built with fpdf2.

US Letter paper (a US mortgage document). The letterhead names the partner (name, address,
contact, and the logo when one is configured); the loan's fields and enumeration values are shown
in words (partner/platform/loan_labels.py).

The content depends only on the report data (the date included, which the caller passes), so the
same report renders the same text. fpdf2's core fonts only know Latin-1: every text goes through
`pdf_text`, which keeps Latin-1, transliterates what it can ("Łódź" -> "Lodz") and replaces the
rest with "?", so no borrower or city name can make a report fail.
"""

import io
import logging
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos
from PIL import Image, UnidentifiedImageError

from partner.fulfillment.automated.fulfillers.address_verification.findings import property_findings
from partner.fulfillment.automated.fulfillers.base import (
    FINDINGS_COLUMNS,
    REFERENCE_LABEL,
    TRANSACTION_ID_LABEL,
    RespondingParty,
)

logger = logging.getLogger(__name__)

PDF_MIME_TYPE = "application/pdf"

# US Letter (215.9 x 279.4 mm) with 0.75 in margins: the tables span the 177.8 mm between them.
PAGE_FORMAT = "letter"
MARGIN_MM = 19.05
# Column widths as shares of the width between the margins.
PROPERTY_COLUMNS = (0.18, 0.35, 0.35, 0.12)  # FINDINGS_COLUMNS: field, as sent, as found, changed
CHECK_COLUMNS = (0.15, 0.25, 0.25, 0.35)  # check, received, data source, outcome
# The largest box the logo is drawn in (mm), its proportions kept; the kinds accepted.
LOGO_MAX_WIDTH_MM = 45.0
LOGO_MAX_HEIGHT_MM = 18.0
LOGO_FORMATS = ("PNG", "JPEG")

# Characters outside Latin-1 that have no decomposition to a Latin letter but an obvious spelling.
_TRANSLITERATIONS = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
    "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-",
    "\u2026": "...", "\u2022": "*", "\u20ac": "EUR", "\u2122": "TM",
    "\u0141": "L", "\u0142": "l", "\u0110": "D", "\u0111": "d", "\u0131": "i",
    "\u0152": "OE", "\u0153": "oe", "\u0126": "H", "\u0127": "h", "\u0166": "T", "\u0167": "t",
    "\u014a": "N", "\u014b": "n", "\u0138": "q", "\u017f": "s",
}  # fmt: skip


def pdf_text(value) -> str:
    """`value` as text the core fonts can draw: Latin-1 kept, others transliterated or '?'."""
    if value is None:
        return ""
    text = unicodedata.normalize("NFC", str(value))
    out = []
    for char in text:
        if char in "\r\n\t":
            out.append(" ")
        elif ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0:
            # Control characters draw nothing useful and may confuse a reader of the report.
            continue
        elif ord(char) <= 0xFF:
            out.append(char)
        elif char in _TRANSLITERATIONS:
            out.append(_TRANSLITERATIONS[char])
        else:
            base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
            if base and all(ord(c) <= 0xFF and ord(c) >= 0x20 for c in base):
                out.append(base)
            else:
                out.append("?")
    return "".join(out)


@dataclass(frozen=True)
class AddressCheck:
    """One check of the report: what was received, what the data source says, and the outcome."""

    name: str
    received: str
    reference: str
    outcome: str
    note: str = ""


@dataclass(frozen=True)
class AddressReport:
    """Everything the address verification report shows."""

    transaction_id: str
    reference_number: str
    summary: str
    received: dict
    corrected: dict
    checks: tuple[AddressCheck, ...]
    data_source: str
    created: datetime
    prepared_by: RespondingParty
    notes: str = ""
    # A PNG or JPEG drawn at the top left of the letterhead; none when empty or unreadable.
    logo_path: str = ""


def _property_rows(received: dict, corrected: dict) -> list[tuple[str, str, str, str]]:
    # Every field of either side, in words (findings.py: the lender's panel shows the same rows).
    return [
        (
            finding["label"],
            _shown(finding["before"]),
            _shown(finding["after"]),
            "Yes" if finding["changed"] else "No",
        )
        for finding in property_findings(received, corrected)
    ]


def _shown(value) -> str:
    if value is None:
        return "(missing)"
    return str(value)


def _logo(path: str) -> tuple[bytes, float, float] | None:
    """The logo file's bytes and its drawn width and height (mm), or None (no logo, or unreadable).

    A logo is decoration: a missing or broken file is logged and the report goes out without it,
    rather than failing the lender's order.
    """
    if not path:
        return None
    try:
        data = Path(path).read_bytes()
        with Image.open(io.BytesIO(data)) as image:
            kind, (width, height) = image.format, image.size
    except (OSError, UnidentifiedImageError, ValueError) as exc:
        logger.warning("PARTNER_LOGO_PATH %s is not readable (%s); the report has no logo", path, type(exc).__name__)
        return None
    if kind not in LOGO_FORMATS or not width or not height:
        logger.warning("PARTNER_LOGO_PATH %s is not a PNG or JPEG image; the report has no logo", path)
        return None
    scale = min(LOGO_MAX_WIDTH_MM / width, LOGO_MAX_HEIGHT_MM / height)
    return data, width * scale, height * scale


def _contact_line(party: RespondingParty) -> str:
    contact = party.point_of_contact
    parts = [f"Phone {contact.phone}" if contact.phone else "", contact.email]
    return " \u00b7 ".join(part for part in parts if part)


def _letterhead(pdf: FPDF, party: RespondingParty, logo_path: str) -> None:
    """The partner's logo (top left, when configured), name, address and contact, then a rule."""
    top = pdf.get_y()
    left = pdf.l_margin
    bottom = top
    logo = _logo(logo_path)
    if logo:
        data, width, height = logo
        pdf.image(io.BytesIO(data), x=left, y=top, w=width, h=height)
        left += width + 6
        bottom = top + height
    pdf.set_y(top)
    city_line = f"{party.city}, {party.state} {party.postal_code}".strip(" ,")
    for text, style, size in [
        (party.name, "B", 12),
        (party.address, "", 9),
        (city_line, "", 9),
        (_contact_line(party), "", 9),
    ]:
        if not text:
            continue
        pdf.set_x(left)
        pdf.set_font("helvetica", style=style, size=size)
        pdf.multi_cell(pdf.w - pdf.r_margin - left, 5, pdf_text(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_y(max(pdf.get_y(), bottom) + 3)
    pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
    pdf.ln(5)


def address_report_document(report: AddressReport) -> FPDF:
    """The report as an fpdf2 document (not yet rendered), for callers that set output options.

    Long because it lays out the page top to bottom: three small drawing helpers, then the
    sections in reading order; split up, one page's layout would be scattered.
    """
    pdf = FPDF(orientation="portrait", unit="mm", format=PAGE_FORMAT)
    pdf.set_creation_date(report.created)
    pdf.set_title(pdf_text(f"Address verification report {report.reference_number}"))
    pdf.set_author(pdf_text(report.prepared_by.name))
    pdf.set_margins(MARGIN_MM, MARGIN_MM, MARGIN_MM)
    pdf.set_auto_page_break(auto=True, margin=MARGIN_MM)
    pdf.add_page()

    def line(text: str, *, size: float = 10, style: str = "", height: float = 6) -> None:
        pdf.set_font("helvetica", style=style, size=size)
        pdf.multi_cell(0, height, pdf_text(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def heading(text: str) -> None:
        pdf.ln(4)
        line(text, size=12, style="B", height=7)

    def table(header: tuple[str, ...], rows: list[tuple[str, ...]], shares: tuple[float, ...]) -> None:
        pdf.set_font("helvetica", size=9)
        widths = tuple(share * pdf.epw for share in shares)
        # markdown stays off: a name like "**Lot 5**" is data, not formatting.
        with pdf.table(width=pdf.epw, col_widths=widths, text_align="LEFT", markdown=False, line_height=5) as grid:
            for values in [header, *rows]:
                row = grid.row()
                for value in values:
                    row.cell(pdf_text(value))

    _letterhead(pdf, report.prepared_by, report.logo_path)
    line("Address verification report", size=16, style="B", height=9)
    pdf.ln(2)
    line(f"{REFERENCE_LABEL}: {report.reference_number}", style="B")
    line(f"Date: {report.created.astimezone(UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    line(f"Result: {report.summary}", style="B")

    heading("Subject property")
    table(
        tuple(FINDINGS_COLUMNS.values()),
        _property_rows(report.received, report.corrected),
        PROPERTY_COLUMNS,
    )

    heading("Checks")
    table(
        ("Check", "Received", "Data source", "Outcome"),
        [
            (
                check.name,
                check.received,
                check.reference,
                f"{check.outcome}. {check.note}" if check.note else check.outcome,
            )
            for check in report.checks
        ],
        CHECK_COLUMNS,
    )

    if report.notes:
        heading("Order notes")
        line(report.notes)

    heading("Data source")
    line(report.data_source)
    pdf.ln(4)
    line(f"{TRANSACTION_ID_LABEL}: {report.transaction_id}", size=8)
    return pdf


def address_report_pdf(report: AddressReport, *, compress: bool = True) -> bytes:
    """The rendered report. `compress=False` leaves the page streams readable (tests)."""
    pdf = address_report_document(report)
    pdf.set_compression(compress)
    return bytes(pdf.output())
