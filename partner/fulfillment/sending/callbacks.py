"""The service's callbacks: a transaction event, read and applied to its order.

A "processed" event completes an automated order. For a staff-worked order it confirms the
delivery it belongs to (`notices.delivery_confirm`), and completes the order only when that
is the final delivery. Any other event is recorded for staff to read.
"""

from partner.fulfillment.models import Order
from partner.fulfillment.orders.services import order_complete, step_record
from partner.fulfillment.staff import notices
from partner.platform import client
from partner.platform.urns import response_processed_event_type


def _response_version(raw: dict):
    """The response version an event names, where the service says it (the spec shows the event's
    type only: the sandbox sends `details.responseVersion`, and None means "not said")."""
    for holder in (raw.get("details"), raw.get("data"), raw):
        if isinstance(holder, dict) and "responseVersion" in holder:
            return holder["responseVersion"]
    return None


def order_event_handle(*, resource_ref: str) -> str:
    """GET the callback event and apply it to its order. Returns the event type."""
    ref = client.resource_ref_parse(resource_ref)
    event = client.get_event(ref.transaction_id, ref.event_id)
    if event.type == response_processed_event_type():
        # An automated order is completed (one statement); a staff-worked one is read and its delivery confirmed.
        order = order_complete(transaction_id=ref.transaction_id, event_id=ref.event_id, automated_only=True)
        if order is not None and order.staff_worked:
            notices.delivery_confirm(order, event_id=ref.event_id, version=_response_version(event.raw))
        return event.type
    order = Order.objects.filter(transaction_id=ref.transaction_id).first()
    if order is not None:
        step_record(order, "event", f"{event.type} ({ref.event_id})")
    return event.type
