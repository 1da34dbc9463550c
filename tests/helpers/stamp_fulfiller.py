"""A fulfiller that lives only in the tests: the smallest new kind of work, written as the registry asks.

It stamps the order: the lender chooses the ink (its own options form), it is the default of
products in the service's STAMP category, and it answers `completed` with one small text file.
`test_new_fulfiller.py` registers it with one line and runs an order through it.
"""

from django import forms

from partner.fulfillment.automated.fulfillers.base import Attachment, Fulfiller, Fulfillment, reference_number
from partner.platform.formats import RESPONSE_COMPLETED


class StampOptionsForm(forms.Form):
    ink = forms.ChoiceField(label="Ink", choices=[("red", "Red"), ("blue", "Blue")], initial="red")


class StampFulfiller(Fulfiller):
    key = "stamp"
    label = "Stamp (test fulfiller)"
    options_form = StampOptionsForm

    @classmethod
    def is_default_for(cls, product: dict) -> bool:
        tags = product.get("tags")
        return isinstance(tags, dict) and "STAMP" in (tags.get("categories") or [])

    def fulfill(self, *, transaction_id: str, request: dict, product: dict) -> Fulfillment:
        options = request.get("options")
        form = StampOptionsForm(options if isinstance(options, dict) else {})
        ink = form.cleaned_data["ink"] if form.is_valid() else "red"
        response = {
            "status": RESPONSE_COMPLETED,
            "partnerStatus": f"Stamped in {ink}",
            "referenceNumber": reference_number("ST", transaction_id),
        }
        stamp = Attachment(
            name="stamp.txt", mime_type="text/plain", content=f"STAMPED {transaction_id} ({ink})\n".encode()
        )
        return Fulfillment(response=response, attachments=[stamp])
