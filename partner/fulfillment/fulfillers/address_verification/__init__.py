"""Address verification: the reference partner's work, done offline with the `zipcodes` data.

The fulfiller owns its parts: the options form the lender fills in (a note), the checks
(`checks.py`) and the PDF report of every check (`report.py`). The response carries the
corrected `loan.property` and the report.
"""

from django import forms
from django.utils import timezone

from partner.fulfillment.fulfillers.address_verification.checks import (
    address_checks,
    data_source,
    order_notes,
    partner_status,
    subject_property,
    zip_record,
)
from partner.fulfillment.fulfillers.address_verification.report import (
    PDF_MIME_TYPE,
    AddressReport,
    address_report_pdf,
)
from partner.fulfillment.fulfillers.base import (
    PARTNER_PARTY,
    Attachment,
    Fulfiller,
    Fulfillment,
    comments_field,
    reference_number,
)
from partner.platform.formats import LOAN_FORMAT, RESPONSE_COMPLETED


class AddressVerificationOptionsForm(forms.Form):
    """Options of the address verification product.

    Every order checks street, city, state and county against the ZIP code and
    attaches the PDF report, so the lender only adds a note; the note travels
    with the request on the service, where the lender's team reads it.
    """

    comments = comments_field("Notes for the order (optional)")


class AddressVerificationFulfiller(Fulfiller):
    key = "address_verification"
    label = "Address verification (ZIP code, city, state, county)"
    options_form = AddressVerificationOptionsForm

    def fulfill(self, *, transaction_id: str, request: dict, product: dict) -> Fulfillment:
        received = subject_property(request)
        record, plus4 = zip_record(received.get("postalCode"))
        checks, corrected, changed = address_checks(received, record, plus4)
        reference = reference_number("AV", transaction_id)
        status = partner_status(changed)
        report = AddressReport(
            transaction_id=transaction_id,
            reference_number=reference,
            summary=status,
            received=received,
            corrected=corrected,
            checks=tuple(checks),
            data_source=data_source(),
            created=timezone.now(),
            prepared_by=PARTNER_PARTY.name,
            notes=order_notes(request),
        )
        response = {
            "status": RESPONSE_COMPLETED,
            "partnerStatus": status,
            "referenceNumber": reference,
            "respondingParty": PARTNER_PARTY.as_dict(),
            "loanFormat": LOAN_FORMAT,
            "loan": {"property": corrected},
        }
        attachment = Attachment(
            name=f"address-verification-{reference}.pdf",
            mime_type=PDF_MIME_TYPE,
            content=address_report_pdf(report),
        )
        return Fulfillment(response=response, attachments=[attachment])
