"""Address verification: the reference partner's work, done offline with the `zipcodes` data.

The fulfiller owns its parts: the options form the lender fills in (a note), the checks
(`checks.py`) and the PDF report of every check (`report.py`). The response carries the
corrected `loan.property` and the report.
"""

from django import forms
from django.conf import settings
from django.utils import timezone

from partner.fulfillment.automated.fulfillers.address_verification.checks import (
    address_checks,
    county_as_written,
    data_source,
    order_notes,
    partner_status,
    subject_property,
    zip_record,
)
from partner.fulfillment.automated.fulfillers.address_verification.findings import property_findings
from partner.fulfillment.automated.fulfillers.address_verification.report import (
    PDF_MIME_TYPE,
    AddressReport,
    address_report_pdf,
)
from partner.fulfillment.automated.fulfillers.base import (
    Attachment,
    Fulfiller,
    Fulfillment,
    comments_field,
    partner_party,
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
        prop = subject_property(request)
        record, plus4 = zip_record(prop.get("postalCode"))
        # From here on a county is written one way: the data source's ("Suffolk County").
        received = county_as_written(prop, record)
        checks, corrected, changed = address_checks(received, record, plus4)
        party = partner_party()
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
            prepared_by=party,
            notes=order_notes(request),
            logo_path=settings.PARTNER_LOGO_PATH,
        )
        response = {
            "status": RESPONSE_COMPLETED,
            "partnerStatus": status,
            "referenceNumber": reference,
            "respondingParty": party.as_dict(),
            "loanFormat": LOAN_FORMAT,
            "loan": {"property": corrected},
        }
        attachment = Attachment(
            name=f"address-verification-{reference}.pdf",
            mime_type=PDF_MIME_TYPE,
            content=address_report_pdf(report),
        )
        return Fulfillment(response=response, attachments=[attachment], findings=property_findings(received, corrected))
