"""Our orders as the tests make and read them: one run of an order as its task makes it
(`order_ran`, `deliveries_sent`), an order left as the sender leaves it (`order_delivered`,
`result_of`), and waiting for an order to reach a status (`order_of`)."""

from tests.helpers.waiting import wait_for


def order_of(transaction_id, status, timeout=60):
    """The order of `transaction_id` once it is in `status` (a worker moves it); fails the test after
    `timeout` seconds, saying where the order, its notifications and the sandbox's webhooks are."""
    from partner.fulfillment.models import Order
    from partner.inbox.models import Notification
    from partner.sandbox.models import WebhookDelivery

    def found():
        return Order.objects.filter(transaction_id=transaction_id, status=status).first()

    def state():
        order = Order.objects.filter(transaction_id=transaction_id).first()
        notes = list(Notification.objects.filter(resource_id=transaction_id).values_list("state", "last_error"))
        deliveries = list(WebhookDelivery.objects.filter(resource_id=transaction_id).values_list("status", "url"))
        if order is None:
            return f"no order; notifications {notes}; deliveries {deliveries}"
        return f"{order.status} {order.failure_reason!r} {order.last_error!r}; notifications {notes}"

    return wait_for(found, timeout=timeout, message=lambda: f"order {transaction_id} in {status} (now: {state()})")


def result_of(order, state="pending"):
    """The delivery of an automated order's result (its documents belong to it), in `state`."""
    from partner.fulfillment.models import Delivery, DeliveryKind

    return Delivery.objects.create(order=order, kind=DeliveryKind.RESULT, state=state)


def order_delivered(transaction_id: str, **fields):
    """An automated order whose result the service took (sent, its callback not come yet), as the
    sender leaves it."""
    from django.utils import timezone

    from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus

    now = timezone.now()
    fields = {"status": OrderStatus.RESPONSE_DELIVERED, "prepared_at": now, "delivered_at": now, **fields}
    order = Order.objects.create(transaction_id=transaction_id, **fields)
    Delivery.objects.create(
        order=order, kind=DeliveryKind.RESULT, state=DeliveryState.SENT, sequence=1, sent_at=now, attempts=1
    )
    return order


def _run(order_id: int):
    """One run of the order, as its task makes it (`partner.fulfillment.runs.order_run`); a run
    stopped by a transient error raises it (the task would retry it)."""
    from partner.fulfillment.runs import order_run

    outcome = order_run(order_id=order_id)
    if outcome.retry is not None:
        raise outcome.error
    return outcome


def order_ran(*, order_id: int):
    """One run of the order (`_run`); the order as the run left it."""
    from partner.fulfillment.models import Order

    _run(order_id)
    return Order.objects.get(pk=order_id)


def deliveries_sent(*, order_id: int) -> int:
    """One run of the order (`_run`): how many deliveries it sent."""
    return _run(order_id).sent


# An address-verification order's loan, right as sent: 94105 is San Francisco, San Francisco County.
LOAN_RIGHT = {
    "property": {
        "streetAddress": "500 Howard Street",
        "city": "San Francisco",
        "state": "CA",
        "postalCode": "94105",
        "county": "San Francisco",
    }
}


def automated_order(fake, transaction_id: str, *, loan: dict = LOAN_RIGHT):
    """An address-verification order opened on the fake platform (its product made), not yet run."""
    from partner.fulfillment.orders.services import order_open
    from tests.helpers.products import LENDER_CREDENTIALS, product_create

    product_create()
    fake.transaction_add(
        transaction_id,
        request={"type": "NEW_REQUEST", "loan": loan, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    order, _, _ = order_open(transaction_id=transaction_id, product_name="address-verification")
    return order
