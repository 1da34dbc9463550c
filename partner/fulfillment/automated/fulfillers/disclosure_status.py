"""Disclosure status update: a documents-delivery product's answer with the spec's action result.

The response carries the `UPDATE_DISCLOSURE_STATUS` result (format, action, details {status:
"active", comments?}), checked against the action rules before it is returned, and only for a
product that holds the action entitlement for the transaction's request type (spec, endpoint #3
note 8). Anything else is a permanent refusal: nothing is sent.
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
from partner.platform.formats import (
    DISCLOSURE_ACTION,
    DISCLOSURE_FORMAT,
    LOAN_FORMAT,
    RESPONSE_PROCESSING,
    action_entitled,
    disclosure_result_violations,
)

# The spec's request type when a transaction does not name one.
DEFAULT_REQUEST_TYPE = "NEW_REQUEST"


def disclosure_details(request: dict) -> dict:
    """The action details: status "active", and the lender's comments when the request has them."""
    details = {"status": "active"}
    options = request.get("options")
    if options is None:
        return details
    if not isinstance(options, dict):
        raise FulfillmentRefused("The transaction request options are not an object, so they cannot be read.")
    comments = options.get("comments")
    if comments is None:
        return details
    if not isinstance(comments, str):
        raise FulfillmentRefused("The disclosure comments (request.options.comments) must be text.")
    if comments.strip():
        details["comments"] = comments
    return details


class DisclosureStatusOptionsForm(forms.Form):
    """Options of the disclosure delivery product: the comment sent with the status update."""

    comments = comments_field("Comment for the disclosure tracking log (optional)")


class DisclosureStatusFulfiller(Fulfiller):
    key = "disclosure_status"
    label = "Disclosure tracking status update (UPDATE_DISCLOSURE_STATUS)"
    options_form = DisclosureStatusOptionsForm

    @classmethod
    def is_default_for(cls, product: dict) -> bool:
        """A product that holds the disclosure status action, for any request type."""
        return action_entitled(product, action=DISCLOSURE_ACTION)

    def fulfill(self, *, transaction_id: str, request: dict, product: dict) -> Fulfillment:
        if not isinstance(request, dict):
            raise FulfillmentRefused("The transaction carries no request to answer.")
        request_type = request.get("type") or DEFAULT_REQUEST_TYPE
        if not isinstance(request_type, str):
            raise FulfillmentRefused("The transaction request type is not text.")
        if not action_entitled(
            product or {}, action=DISCLOSURE_ACTION, request_type=request_type, fmt=DISCLOSURE_FORMAT
        ):
            name = (product or {}).get("name") or (product or {}).get("id") or "this product"
            raise FulfillmentRefused(
                f"Product {name} does not hold the {DISCLOSURE_ACTION} action entitlement "
                f"(format {DISCLOSURE_FORMAT}) for request type {request_type}, so the disclosure status "
                "cannot be updated.",
                # Our product configuration, not the lender's data: the issue requires that nothing
                # is sent to the service in this case, a partnerStatus included.
                tell_lender=False,
            )
        result = {"format": DISCLOSURE_FORMAT, "action": DISCLOSURE_ACTION, "details": disclosure_details(request)}
        violations = disclosure_result_violations(result)
        if violations:
            listed = "; ".join(f"{v.field} {v.message}" for v in violations)
            raise FulfillmentRefused(f"The disclosure status result does not conform to the action rules: {listed}.")
        response = {
            "status": RESPONSE_PROCESSING,
            "loanFormat": LOAN_FORMAT,
            "partnerStatus": "Disclosure tracking status set to active",
            "referenceNumber": reference_number("DS", transaction_id),
            "respondingParty": partner_party().as_dict(include_fax=True),
            "result": result,
        }
        return Fulfillment(response=response, attachments=[])
