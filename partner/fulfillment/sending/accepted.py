"""What a delivery the service accepted means for its order, applied once.

The service accepted a PATCH when it answered it, and our two witnesses of that race each other:
the sender's record of the answer (`sender._sent`) and the service's "processed" callback
(`callbacks.delivery_confirm`), which may come first. Whichever takes the delivery out of `pending`
(to `sent` or to `confirmed`, under the order's lock) applies what the acceptance means
(`delivery_accepted`): an acknowledgement moves the order to staff and announces it (the partner's
system learns of the order from that announcement, so it comes before any confirmation of the
order's deliveries), a result is recorded as delivered, a staff answer as sent. The other witness
finds the delivery out of `pending` and applies nothing again.
"""

from collections.abc import Callable

from partner.fulfillment.models import Delivery, DeliveryKind, Order, OrderDocument, OrderStatus
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.history import first_time, step_record
from partner.fulfillment.orders.metrics import order_delivered
from partner.fulfillment.orders.states import order_move


def _acknowledged(order: Order, delivery: Delivery, now, documents) -> None:
    order_move(Order.objects.filter(pk=order.pk), OrderStatus.WITH_STAFF, updated_at=now)
    step_record(order, "acknowledged", delivery.partner_status)
    announcements.order_announce(order_id=order.pk, what=announcements.ACKNOWLEDGED, delivery_id=delivery.pk)


def _result_delivered(order: Order, delivery: Delivery, now, documents) -> None:
    if documents is None:  # the callback's witness: the documents as the sender sent them
        documents = list(OrderDocument.objects.filter(delivery=delivery.pk).order_by("position"))
    resource_id = documents[0].resource_id if documents else ""
    # The processed callback may have completed the order already (and set delivered_at): keep the
    # first delivery time.
    Order.objects.filter(pk=order.pk).update(
        delivered_at=first_time("delivered_at", now), resource_id=resource_id, updated_at=now
    )
    order.delivered_at = order.delivered_at or now
    order.resource_id, order.updated_at = resource_id, now
    order_delivered(order, now)
    step_record(order, "delivered", f"{len(documents)} resource(s)")


def _lender_told(order: Order, delivery: Delivery, now, documents) -> None:
    step_record(order, "lender_told", delivery.partner_status)


def _answer_sent(order: Order, delivery: Delivery, now, documents) -> None:
    step_record(order, "sent", f"{delivery.get_kind_display()} (response version {delivery.sequence})")


ACCEPTED_EFFECTS: dict[str, Callable] = {
    DeliveryKind.RESULT: _result_delivered,
    DeliveryKind.ACKNOWLEDGEMENT: _acknowledged,
    DeliveryKind.STATUS_UPDATE: _answer_sent,
    DeliveryKind.PARTIAL: _answer_sent,
    DeliveryKind.FINAL: _answer_sent,
    DeliveryKind.DECLINE: _answer_sent,
    DeliveryKind.FAILURE_NOTICE: _lender_told,
}


def delivery_accepted(order: Order, delivery: Delivery, now, *, documents: list[OrderDocument] | None = None) -> None:
    """Apply what the service's acceptance of `delivery` means for `order`, in the caller's
    transaction, under the order's lock, by the witness that took the delivery out of `pending`.
    `documents`: those the sender sent with it (None: read them)."""
    ACCEPTED_EFFECTS[delivery.kind](order, delivery, now, documents)
