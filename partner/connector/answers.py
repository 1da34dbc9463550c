"""A partner system's answers to its orders: each one a staff action, made as the connection's user.

The system acts as its connection's user (`Connection.user`), to whom its connected orders are
assigned when they arrive, so each answer goes through the staff's rules and becomes the same stored
`Delivery` a staff member's would (`partner.fulfillment.staff.services`, called, never copied),
sent by the same sender. The staff's order lock serialises the system's answers with a staff
member's: exactly one final delivery or decline. An order a staff member took over refuses the
system's answers (the staff's rule: only the one who works the order acts on it).
"""

from django.db import transaction

from partner.connector.models import Connection
from partner.connector.selectors import connection_orders
from partner.core.errors import ApplicationError
from partner.fulfillment.models import Delivery, Order, OrderDocument
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.staff import services as staff


class OrderNotFound(ApplicationError):
    """No such order of the connection (another connection's included)."""

    status_code = 404
    slug = "order-not-found"
    title = "Order not found"


class TakenOver(ApplicationError):
    """A staff member took the order over: the system's answers to it are refused (422)."""

    status_code = 422
    slug = "taken-over"
    title = "A staff member took the order over"


ID_MAX = 9_223_372_036_854_775_807  # the largest bigint key: a larger number names no order or event


def order_of(*, connection: Connection, order_id) -> Order:
    """The connection's order `order_id` (its id, as a number or the path's digits); OrderNotFound
    for any other (another system's included, or no id at all)."""
    number = int(order_id) if str(order_id).isdigit() and str(order_id).isascii() else 0
    order = connection_orders(connection).filter(pk=number).first() if 0 < number <= ID_MAX else None
    if order is None:
        raise OrderNotFound(f"The connection has no order {order_id}.")
    return order


def document_of(*, connection: Connection, document_id: int) -> OrderDocument:
    """A document uploaded to one of the connection's orders."""
    document = OrderDocument.objects.filter(pk=document_id, order__in=connection_orders(connection)).first()
    if document is None:
        raise OrderNotFound(f"The connection has no document {document_id}.")
    return document


def answerable(*, connection: Connection, order_id) -> Order:
    """The connection's order, when its system works it (it is assigned to the connection's user
    from its arrival); refused with TakenOver once staff took it over, whoever works it now: a
    staff member, or none after a release (a release gives the order back to the staff, not to
    the system; only staff hand it back, `services.order_hand_back`). The staff's own rule refuses
    it again, under the order's lock, should a take-over come in between."""
    order = order_of(connection=connection, order_id=order_id)
    if order.assigned_to_id == connection.user_id:
        return order
    if order.assigned_to_id is None:
        raise TakenOver(
            f"Staff took order {order.pk} over and released it to the staff: your system's answers to it "
            "are refused until a staff member hands it back."
        )
    raise TakenOver(
        f"A staff member ({order.assigned_to.get_username()}) took order {order.pk} over: "
        "your system's answers to it are refused from now on."
    )


def order_acknowledge(*, connection: Connection, order_id: int | str) -> Order:
    """The system says it has the order. The service was acknowledged on arrival, so nothing is sent;
    refused (as every answer) when a staff member took the order over."""
    order = answerable(connection=connection, order_id=order_id)
    with transaction.atomic():
        order = staff.order_take(order_id=order.pk, user=connection.user)
        if not order.steps.filter(name="system_acknowledged").exists():
            step_record(order, "system_acknowledged", connection.name, actor=connection.user.get_username())
    return order


def status_update_post(*, connection: Connection, order_id: int | str, text: str) -> Delivery:
    order = answerable(connection=connection, order_id=order_id)
    return staff.status_update_post(order_id=order.pk, text=text, user=connection.user)


def document_upload(*, connection: Connection, order_id: int | str, upload) -> OrderDocument:
    order = answerable(connection=connection, order_id=order_id)
    return staff.document_attach(order_id=order.pk, upload=upload, user=connection.user)


def delivery_request(
    *,
    connection: Connection,
    order_id: int | str,
    final: bool,
    message: str = "",
    loan: dict | None = None,
    document_ids: list[int] | None = None,
) -> Delivery:
    order = answerable(connection=connection, order_id=order_id)
    return staff.delivery_request(
        order_id=order.pk,
        final=final,
        user=connection.user,
        partner_status=message,
        loan=loan,
        document_ids=document_ids,
    )


def order_decline(*, connection: Connection, order_id: int | str, reason: str) -> Delivery:
    order = answerable(connection=connection, order_id=order_id)
    return staff.order_decline(order_id=order.pk, reason=reason, user=connection.user)
