"""What happens to an order, announced to whatever sits above the code that makes it happen: one
signal, sent from here.

The connector (`partner.connector`, a layer above) tells a partner's own order system of its
connected orders; the staff's package (`partner.fulfillment.staff`, above the sending and the
automated work inside the fulfillment) e-mails staff of a new order. Neither may be imported by the
code that makes an order's moments happen (the sender's acknowledgement, a delivery confirmed or
refused, the completion, the failure, the decline, an assignment): it calls `order_announce`, and
they receive the signal (connected in their `AppConfig.ready`).

The signal is sent inside the caller's transaction and its receivers run in it (Django signals
are synchronous): what a receiver stores (an event for the partner's system) commits or rolls back
with the move that caused it, and is never lost nor sent for a move that did not happen. A
receiver must not call out of the process; it stores, and a worker sends after the commit.
"""

from django.dispatch import Signal

# Kwargs: order_id (int), what (one of the names below), delivery_id (int or None).
order_announced = Signal()

ACKNOWLEDGED = "acknowledged"  # the acknowledgement reached the service: the order is with its workers
DELIVERY_CONFIRMED = "delivery_confirmed"  # the service processed one of our deliveries
DELIVERY_FAILED = "delivery_failed"  # the service refused one of our deliveries for good
COMPLETED = "completed"  # the service processed our final response
FAILED = "failed"  # the order failed for good
DECLINED = "declined"  # our decline reached the service
TAKEN = "taken"  # the order was assigned: a staff member took it (or took it over), or a system was given it


def order_announce(*, order_id: int, what: str, delivery_id: int | None = None) -> None:
    """Tell the receivers, in the caller's transaction, that `what` happened to the order."""
    order_announced.send(sender=order_announce, order_id=order_id, what=what, delivery_id=delivery_id)
