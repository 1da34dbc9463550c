"""What the fulfillment does with each notification the inbox dispatches to it.

The inbox's dispatch table (`partner.inbox.dispatch`) maps (resource type, event type) to
these functions; each takes the notification's resource id, resource reference and product
name, so the fulfillment needs to know nothing of the inbox.
"""

from partner.fulfillment.enqueue import order_run_enqueue
from partner.fulfillment.orders.history import steps_batched
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_work
from partner.fulfillment.sending.callbacks import order_event_handle


def transaction_created(*, resource_id: str, resource_ref: str, product_name: str) -> None:
    """A new transaction: open its order and run it here, in this notification's task (the order's
    steps, "opened" with them, written in one INSERT at the end). A run that is to be retried goes
    to the order's task. A transaction we knew already (a repeated notification) is handed to a
    worker instead."""
    with steps_batched():
        order, created, lease = order_open(
            transaction_id=resource_id, resource_ref=resource_ref, product_name=product_name, work_here=True
        )
        if created:
            outcome = order_work(order, lease)
            if outcome.retry is not None:
                order_run_enqueue(
                    order.pk,
                    countdown=outcome.retry.countdown,
                    rate_limited_since=outcome.retry.rate_limited_since,
                    outage_since=outcome.retry.outage_since,
                )


def event_created(*, resource_id: str, resource_ref: str, product_name: str) -> None:
    """A transaction event (the service's callback): read it, confirm the delivery it is about."""
    order_event_handle(resource_ref=resource_ref)
