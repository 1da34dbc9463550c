"""What the fulfillment does with each notification the inbox dispatches to it.

The inbox's dispatch table (`partner.inbox.dispatch`) maps (resource type, event type) to
these functions; each takes the notification's resource id, resource reference and product
name, so the fulfillment needs to know nothing of the inbox.
"""

from partner.fulfillment.automated.pipeline import order_fulfill_taken
from partner.fulfillment.orders.services import order_open, steps_batched
from partner.fulfillment.sending.callbacks import order_event_handle


def transaction_created(*, resource_id: str, resource_ref: str, product_name: str) -> None:
    """A new transaction: open its order and do its work here, in this notification's task (the
    order's steps, "opened" with them, written in one INSERT at the end). A transaction we knew
    already (a repeated notification) is handed to a worker instead."""
    with steps_batched():
        order, created = order_open(
            transaction_id=resource_id, resource_ref=resource_ref, product_name=product_name, work_here=True
        )
        if created:
            order_fulfill_taken(order)


def event_created(*, resource_id: str, resource_ref: str, product_name: str) -> None:
    """A transaction event (the service's callback): read it, complete the order when it says so."""
    order_event_handle(resource_ref=resource_ref)
