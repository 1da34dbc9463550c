"""The address verification report attached to the response: a PDF built with fpdf2.

The content depends only on the report data (the date included, which the caller passes), so the
same report renders the same text. fpdf2's core fonts only know Latin-1: every text goes through
`pdf_text`, which keeps Latin-1, transliterates what it can ("Łódź" -> "Lodz") and replaces the
rest with "?", so no borrower or city name can make a report fail.
"""

import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from fpdf import FPDF
from fpdf.enums import XPos, YPos

PDF_MIME_TYPE = "application/pdf"

# The subject property fields of the spec, in the order a person reads an address.
PROPERTY_FIELDS = (
    ("streetAddress", "Street address"),
    ("city", "City"),
    ("state", "State"),
    ("postalCode", "ZIP code"),
    ("county", "County"),
    ("loanPurposeType", "Loan purpose"),
    ("propertyUsageType", "Property usage"),
)

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
    prepared_by: str
    notes: str = ""


def _property_rows(received: dict, corrected: dict) -> list[tuple[str, str, str, str]]:
    known = [name for name, _ in PROPERTY_FIELDS]
    labels = dict(PROPERTY_FIELDS)
    # Fields beyond the spec's list are shown too (sorted, after the known ones): the report
    # shows the property exactly as received.
    extra = sorted((set(received) | set(corrected)) - set(known))
    rows = []
    for name in [*known, *extra]:
        if name not in received and name not in corrected:
            continue
        before = received.get(name)
        after = corrected.get(name)
        changed = "yes" if before != after else ""
        rows.append((labels.get(name, name), _shown(before), _shown(after), changed))
    return rows


def _shown(value) -> str:
    if value is None:
        return "(missing)"
    return str(value)


def address_report_document(report: AddressReport) -> FPDF:
    """The report as an fpdf2 document (not yet rendered), for callers that set output options.

    Long because it lays out the page top to bottom: three small drawing helpers, then the
    sections in reading order; split up, one page's layout would be scattered.
    """
    pdf = FPDF(orientation="portrait", unit="mm", format="A4")
    pdf.set_creation_date(report.created)
    pdf.set_title(pdf_text(f"Address verification report {report.reference_number}"))
    pdf.set_author(pdf_text(report.prepared_by))
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()

    def line(text: str, *, size: float = 10, style: str = "", height: float = 6) -> None:
        pdf.set_font("helvetica", style=style, size=size)
        pdf.multi_cell(0, height, pdf_text(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def heading(text: str) -> None:
        pdf.ln(4)
        line(text, size=12, style="B", height=7)

    def table(header: tuple[str, ...], rows: list[tuple[str, ...]], widths: tuple[int, ...]) -> None:
        pdf.set_font("helvetica", size=9)
        # markdown stays off: a name like "**Lot 5**" is data, not formatting.
        with pdf.table(col_widths=widths, text_align="LEFT", markdown=False, line_height=5) as grid:
            for values in [header, *rows]:
                row = grid.row()
                for value in values:
                    row.cell(pdf_text(value))

    line("Address verification report", size=16, style="B", height=9)
    line(f"Prepared by {report.prepared_by}", size=9)
    pdf.ln(2)
    line(f"Transaction: {report.transaction_id}")
    line(f"Reference number: {report.reference_number}")
    line(f"Date: {report.created.astimezone(UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    line(f"Result: {report.summary}", style="B")

    heading("Subject property")
    table(
        ("Field", "As received", "As corrected", "Changed"),
        _property_rows(report.received, report.corrected),
        (30, 65, 65, 20),
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
        (30, 50, 50, 50),
    )

    if report.notes:
        heading("Order notes")
        line(report.notes)

    heading("Data source")
    line(report.data_source)
    return pdf


def address_report_pdf(report: AddressReport, *, compress: bool = True) -> bytes:
    """The rendered report. `compress=False` leaves the page streams readable (tests)."""
    pdf = address_report_document(report)
    pdf.set_compression(compress)
    return bytes(pdf.output())
