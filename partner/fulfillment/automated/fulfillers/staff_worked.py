"""Staff-worked products (appraisals, inspections, title): acknowledged at once, worked by people.

The pipeline checks the order as for any product (credentials, entitlements, product), then sends
this fulfiller's acknowledgement: status `processing`, "Order received", our reference and who we
are. Staff then post status updates and deliver (partial, final) or decline from the admin
(`partner.fulfillment.staff.services`).
"""

from django import forms

from partner.fulfillment.automated.fulfillers.base import (
    Fulfiller,
    Fulfillment,
    FulfillmentRefused,
    comments_field,
    partner_party,
    reference_number,
)
from partner.platform.formats import RESPONSE_PROCESSING

ACKNOWLEDGEMENT_STATUS = "Order received"


class StaffWorkedOptionsForm(forms.Form):
    """The lender's note to the staff who will work the order."""

    comments = comments_field("Notes for the order (optional): access, contacts, deadlines")


class StaffWorkedFulfiller(Fulfiller):
    key = "staff_worked"
    label = "Worked by staff (acknowledged at once, delivered by people)"
    options_form = StaffWorkedOptionsForm

    @classmethod
    def is_default_for(cls, product: dict) -> bool:
        """A product whose workflows say people work it: `interactive` and not `automated`."""
        workflows = ((product or {}).get("tags") or {}).get("workflows") or []
        return isinstance(workflows, list) and "interactive" in workflows and "automated" not in workflows

    def fulfill(self, *, transaction_id: str, request: dict, product: dict) -> Fulfillment:
        if not isinstance(request, dict):
            raise FulfillmentRefused("The transaction carries no request to answer.")
        response = {
            "status": RESPONSE_PROCESSING,
            "partnerStatus": ACKNOWLEDGEMENT_STATUS,
            "referenceNumber": reference_number("OR", transaction_id),
            "respondingParty": partner_party().as_dict(),
        }
        return Fulfillment(response=response, final=False)
