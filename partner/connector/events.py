"""The events a partner's system is told of: made from the fulfillment's announcements, stored at once.

The fulfillment announces an order's moments (`partner.fulfillment.orders.announcements`) inside the
transaction that makes them; `order_announced_receive` turns each announcement about a connected
order into an `Event` for its connection, in that same transaction, so an event exists exactly when
its move committed. A worker sends it after the commit (`partner.connector.sending`).

Each payload follows the Standard Webhooks convention, `{"type", "timestamp", "data"}`; `data`
carries the order as it stands (its status and its `version`, the number of events made for it so
far), so a receiver that gets two events out of order keeps the higher version.

`order.created` carries the order as the lender sent it: the loan data the product's request data
entitlement allows (the service already sends no more), the options and notes, who ordered it and
when it is due. Never the lender's credential values: the order keeps none (`Order.request`).
"""

import logging
import uuid

from django.db import transaction
from django.utils import timezone

from partner.catalog.product_cache import catalog_connected, catalog_product
from partner.connector.metrics import ENTITLEMENT_UNREADABLE
from partner.connector.models import Connection, Event, EventState, OrderRoute
from partner.core.housekeeping import housekeeping_chore_wake
from partner.fulfillment.models import FINAL_STATUSES, Delivery, Order
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.services import order_assign
from partner.platform import formats

logger = logging.getLogger(__name__)

# The name of the events' relay among the workers' housekeeping chores (`sending.relay_chore`).
RELAY_CHORE = "connector events"

# announcement -> the event type it becomes
EVENT_OF = {
    announcements.ACKNOWLEDGED: "order.created",
    announcements.DELIVERY_CONFIRMED: "order.delivery.confirmed",
    announcements.DELIVERY_FAILED: "order.delivery.failed",
    announcements.COMPLETED: "order.completed",
    announcements.DECLINED: "order.declined",
    announcements.FAILED: "order.failed",
    announcements.TAKEN: "order.taken_over",
}


def connection_of(product_name: str) -> Connection | None:
    """The connection that works the product, when it is a connected one (the connected products'
    names in the shared cache answer for every other product: no query)."""
    if not product_name or product_name not in catalog_connected():
        return None
    return Connection.objects.filter(products__name=product_name).select_related("user").first()


def request_loan_fields(
    product_raw: dict, *, request_type: str, product_name: str = "", tell: bool = True
) -> list[tuple] | None:
    """The loan paths the product may read of a request (`entitlements.data.transaction[].request
    .fields` for the request type, each as `formats.loan_path` reads it: `property`, `loan.property`,
    `loan.property.city`); None when it names none (the service's word stands). A field that is no
    loan path is logged and counted (`tell`: for an order, not for a read of the product's forms),
    never silently dropped; when none is readable, None."""
    entitlements = product_raw.get("entitlements") if isinstance(product_raw, dict) else None
    data = entitlements.get("data") if isinstance(entitlements, dict) else None
    items = data.get("transaction") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and request_type in (item.get("requestTypes") or []):
            request = item.get("request")
            fields = request.get("fields") if isinstance(request, dict) else None
            if fields is None:
                return None
            if not isinstance(fields, list):
                if tell:
                    _unreadable(product_name, "not_a_path", f"fields that are not a list: {fields!r:.80}")
                return None
            paths = [formats.loan_path(field) for field in fields]
            readable = [path for path in paths if path is not None]
            unreadable = [f"{field!r:.80}" for field, path in zip(fields, paths, strict=True) if path is None]
            if unreadable and tell:
                _unreadable(product_name, "not_a_path", f"fields that are no loan path: {', '.join(unreadable)}")
            return None if unreadable and not readable else readable
    return None


def _unreadable(product_name: str, reason: str, what: str) -> None:
    ENTITLEMENT_UNREADABLE.labels(product=product_name or "-", reason=reason).inc()
    logger.warning("connector: product %s: its request data entitlement has %s", product_name or "-", what)


def _tree(paths: list[tuple]) -> dict | bool:
    """The paths as a tree of keys; True: the whole value below."""
    tree: dict = {}
    for path in paths:
        if not path:
            return True
        node = tree
        for depth, key in enumerate(path):
            if node.get(key) is True:
                break
            if depth == len(path) - 1:
                node[key] = True
            else:
                node = node.setdefault(key, {})
    return tree


def _picked(value, tree):
    """What of `value` the tree keeps (a list: each of its items), or None for nothing."""
    if tree is True:
        return value
    if isinstance(value, list):
        items = [_picked(item, tree) for item in value]
        return items if any(item is not None for item in items) else None
    if not isinstance(value, dict):
        return None
    kept = {}
    for key, below in tree.items():
        if key in value and (picked := _picked(value[key], below)) is not None:
            kept[key] = picked
    return kept or None


def loan_entitled(loan: dict, paths: list[tuple] | None, *, product_name: str = "") -> dict:
    """The part of `loan` the paths name (the sub-tree of each: `property.city` keeps
    `{"property": {"city": …}}`); all of it when `paths` is None. Paths that match none of a loan's
    data are logged and counted: an order never loses its data without a word."""
    if paths is None:
        return loan
    kept = _picked(loan, _tree(paths)) or {}
    if loan and paths and not kept:
        named = ", ".join(".".join(("loan", *path)) for path in paths) or "no field"
        _unreadable(product_name, "matches_nothing", f"fields matching none of the order's loan data ({named})")
    return kept


def _time(value) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def order_data(order: Order, *, version: int) -> dict:
    """The order as every event carries it: where it stands, and its version."""
    return {
        "id": order.pk,
        "reference": order.reference_number,
        "product": order.product_name,
        "status": order.status,
        "version": version,
        "due_at": _time(order.due_at),
        "updated_at": _time(order.updated_at),
        "worked_by": order.assigned_to.get_username() if order.assigned_to_id else None,
    }


def order_request(order: Order) -> dict:
    """What the lender sent (order.created): loan data as entitled, options, notes, who, no credentials."""
    request = {key: value for key, value in (order.request or {}).items() if key != "credentials"}
    loan = request.get("loan") if isinstance(request.get("loan"), dict) else {}
    product = catalog_product(service_id=None, name=order.product_name) if order.product_name else None
    paths = request_loan_fields(
        product.raw if product else {},
        request_type=order.request_type or "NEW_REQUEST",
        product_name=order.product_name,
    )
    loan = loan_entitled(loan, paths, product_name=order.product_name)
    ordered_by = None
    if order.ordered_by_id:
        account = order.ordered_by
        ordered_by = {"username": account.username, "company": account.company.name if account.company else None}
    return {
        "type": request.get("type"),
        "loan": loan,
        "options": request.get("options") or {},
        "notes": (request.get("options") or {}).get("comments") or request.get("comments") or "",
        "ordered_by": ordered_by,
        "originating_party": request.get("originatingParty"),
    }


def delivery_data(delivery: Delivery) -> dict:
    return {
        "id": delivery.pk,
        "kind": delivery.kind,
        "state": delivery.state,
        "partner_status": delivery.partner_status,
        "failure_reason": delivery.failure_reason,
    }


def event_store(*, connection: Connection, order: Order, event_type: str, data: dict) -> Event | None:
    """Store one event for the connection (in the caller's transaction); None when it does not want the type."""
    if not connection.wants(event_type):
        return None
    with transaction.atomic():
        # One event of an order at a time: with the order's row locked until the caller commits, two
        # moves of one order committing together (two deliveries confirmed at once) never share a
        # version, and an order's events are numbered, and their rows made, in the order they commit.
        list(Order.objects.select_for_update().filter(pk=order.pk).values_list("pk", flat=True))
        version = Event.objects.filter(connection=connection, order=order).count() + 1
        now = timezone.now()
        payload = {
            "type": event_type,
            "timestamp": _time(now),
            "data": {"order": order_data(order, version=version), **data},
        }
        event = Event.objects.create(
            connection=connection,
            order=order,
            message_id=f"msg_{uuid.uuid4().hex}",
            type=event_type,
            payload=payload,
            state=EventState.PENDING if connection.endpoint_url else EventState.PULL,
        )
    if event.state == EventState.PENDING:
        # Stored by a worker's task (a callback's confirmation, an order's arrival): its relay hands it
        # out once this commits, not up to CONNECTOR_RELAY_INTERVAL later. (A web worker keeps no house:
        # an event it stores waits for a worker's round.)
        transaction.on_commit(lambda: housekeeping_chore_wake(RELAY_CHORE))
    return event


def _order_read(order_id: int) -> Order | None:
    """The order as an announcement reads it, in one statement: who works it, who ordered it (and
    their company), and its route with the connection and the connection's user (None there when it
    has no route)."""
    return (
        Order.objects.select_related("assigned_to", "ordered_by__company", "connector_route__connection__user")
        .filter(pk=order_id)
        .first()
    )


def _routed_to(order: Order) -> Connection | None:
    """The connection the order was routed to at its acknowledgement, as `_order_read` read it (no query)."""
    try:
        return order.connector_route.connection
    except OrderRoute.DoesNotExist:
        return None


def _routed(order_id: int) -> bool:
    """Whether the order was routed at all (one small statement), remembered for the rest of an
    announcing transaction (`announcements.atomic`: a callback's confirmation and completion ask
    once). That transaction holds the order's lock, and a route is recorded only under it (at the
    order's acknowledgement, which tells this memory, `_route_known`; by a product's hand-over, of
    orders routed already): "not routed" stays true to the block's end. "Routed" is only where to
    look: the order is then read with its route (`_order_read`), so a route gone since (its
    connection deleted, a savepoint rolled back) sends no event."""
    memory = announcements.remembered(__name__)
    if memory is not None and order_id in memory:
        return memory[order_id]
    routed = OrderRoute.objects.filter(order_id=order_id).exists()
    if memory is not None:
        memory[order_id] = routed
    return routed


def _route_known(order_id: int, *, routed: bool) -> None:
    """The acknowledgement's answer to "routed?", for the rest of an announcing transaction."""
    memory = announcements.remembered(__name__)
    if memory is not None:
        memory[order_id] = routed


def order_announced_receive(sender, *, order_id: int, what: str, delivery_id: int | None = None, **kwargs) -> None:
    """The receiver of the fulfillment's announcements (connected in `ConnectorConfig.ready`).

    The acknowledgement routes the order: to the connection that works its product then, recorded
    for good (`OrderRoute`). Every later event goes to that recorded connection, whatever the
    product's settings are by then. Where no product is connected at all the connected products'
    names in the shared cache answer (`catalog_connected`: a small key, not the catalog) without a
    query and nothing is stored: an automated order costs nothing (a partner that switches its last
    connected product back to staff work stops its routed orders' events with it; the API still
    serves them to their connection). Else a later move asks whether the order was routed at all
    (one small statement, once per announcing transaction: a staff-worked order beside connected
    ones stops there), and a routed order, or an acknowledgement, is read in one statement with its
    route, its connection and the people an event names; the delivery is read when one is
    announced."""
    event_type = EVENT_OF.get(what)
    if event_type is None or not catalog_connected():
        return
    if what != announcements.ACKNOWLEDGED and not _routed(order_id):
        return  # never routed: no event (reading the whole order first costs three times this)
    order = _order_read(order_id)
    if order is None:
        return
    connection = _routed_to(order)
    if what == announcements.ACKNOWLEDGED and connection is None:
        connection = connection_of(order.product_name or "")
        if connection is not None:
            # One statement (INSERT … ON CONFLICT DO NOTHING): a route recorded meanwhile stays as it is.
            route = OrderRoute(order_id=order_id, connection=connection)
            OrderRoute.objects.bulk_create([route], ignore_conflicts=True)
    if what == announcements.ACKNOWLEDGED:
        _route_known(order_id, routed=connection is not None)
    if connection is None:
        return
    data = {}
    if what == announcements.ACKNOWLEDGED:
        # The system works the order from now on (unless someone took it first): it answers as its
        # connection's user.
        if order.assigned_to_id is None and not order_assign(order=order, user=connection.user):
            order.refresh_from_db()
        data["request"] = order_request(order)
    elif what == announcements.TAKEN and order.assigned_to_id == connection.user_id:
        return  # the system's own assignment, not a staff member's
    if delivery_id is not None:
        delivery = Delivery.objects.filter(pk=delivery_id).first()
        if delivery is not None:
            data["delivery"] = delivery_data(delivery)
    event_store(connection=connection, order=order, event_type=event_type, data=data)


def connection_order_hand(*, product_name: str, previous: Connection, connection: Connection) -> int:
    """A moved product's open orders that `previous`'s system works (not those staff took over):
    routed and assigned to `connection`'s user, which is told of each as it would be of a new one
    (`order.created`); in the caller's transaction. How many."""
    orders = Order.objects.filter(
        product_name=product_name, staff_worked=True, assigned_to=previous.user, connector_route__connection=previous
    ).exclude(status__in=FINAL_STATUSES)
    handed = 0
    for order in orders.select_related("assigned_to", "ordered_by__company").select_for_update(of=("self",)):
        # Routed first: the assignment's TAKEN is then the new system's own (the old one is told nothing more).
        OrderRoute.objects.update_or_create(order_id=order.pk, defaults={"connection": connection})
        order_assign(order=order, user=connection.user)  # locked: always written
        event_store(
            connection=connection, order=order, event_type="order.created", data={"request": order_request(order)}
        )
        handed += 1
    return handed
