"""The fulfillers of the orders people work: staff-worked products, and connected ones.

Staff-worked products (appraisals, inspections, title) are acknowledged at once and worked by
people. The pipeline checks the order as for any product (credentials, entitlements, product), then
sends this fulfiller's acknowledgement: status `processing`, "Order received", our reference and
who we are. Staff then post status updates and deliver (partial, final) or decline from the admin
(`partner.fulfillment.staff.services`).

Connected products are checked and acknowledged as a staff-worked one is; from then on the
partner's own order system is told of the order by signed events and answers it through the
connector's API (`partner.connector`), which stores each answer as the same `Delivery` a staff
member's action would. Staff may take a connected order over by hand and work it as a staff-worked
order.

Both sit with the staff's package, above the automated work whose `Fulfiller` they extend; the
registry (`automated.fulfillers.FULFILLERS`) learns them when Django starts (`FulfillmentConfig.ready`).
"""

from django import forms

from partner.catalog.fulfiller_keys import CONNECTED
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


class ConnectedFulfiller(StaffWorkedFulfiller):
    key = CONNECTED
    label = "Connected: the partner's own order system answers it (acknowledged at once)"

    @classmethod
    def is_default_for(cls, product: dict) -> bool:
        return False  # chosen by staff for a product they connect, never by a product's tags
