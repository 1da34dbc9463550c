"""The rules of a connection and of its events: create one, rotate its signing secrets, replay
events, take an order over, give events their place in the feed.

A connection is created with its user (who the system acts as) and its OAuth client (client
credentials, confidential): the client secret is shown once, to the person who created it.
"""

import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection as db_connection
from django.db import transaction
from django.utils import timezone
from oauth2_provider.generators import generate_client_secret
from oauth2_provider.models import get_application_model

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.catalog.services import product_fulfiller_set
from partner.connector.events import connection_order_hand, event_store
from partner.connector.models import EVENT_TYPES, Connection, Event, EventState, OrderRoute, secret_new
from partner.connector.selectors import FEED_PAGE, events_after
from partner.core.checks import url_on_loopback
from partner.core.errors import ApplicationError
from partner.fulfillment.models import FINAL_STATUSES, Order
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.staff.services import order_take
from partner.platform.locations import METADATA_ADDRESSES, address_refusal


class ConnectionRefused(ApplicationError):
    """A connection action that breaks a rule: `message` says which."""


@dataclass(frozen=True)
class Created:
    connection: Connection
    client_id: str
    client_secret: str  # shown once: only its hash is kept
    signing_secret: str


def endpoint_address_rule(url: str) -> Callable[[IPv4Address | IPv6Address], str | None]:
    """Why events to `url` may not go to an address (e.g. "a private address"), None when they may.

    The upload locations' rule (`partner.platform.locations.address_refusal`: loopback, private,
    link-local, reserved, shared and cloud metadata ranges refused), except the networks
    CONNECTOR_ENDPOINT_NETWORKS names (a partner's system inside their own network; a metadata
    address never) and, while the sandbox is mounted, this machine's loopback for an endpoint named
    on it (local runs and tests)."""
    allowed = [ip_network(network.strip(), strict=False) for network in settings.CONNECTOR_ENDPOINT_NETWORKS]
    on_loopback = settings.SANDBOX_ENABLED and url_on_loopback(url)

    def refusal(address: IPv4Address | IPv6Address) -> str | None:
        reason = address_refusal(address)
        if reason is None or address in METADATA_ADDRESSES:
            return reason
        plain = address.ipv4_mapped or address if isinstance(address, IPv6Address) else address
        if (on_loopback and plain.is_loopback) or any(plain in network for network in allowed):
            return None
        return reason

    return refusal


def endpoint_problem(url: str) -> str | None:
    """Why events may not go to `url`, or None: at saving, and again before each send (the rule as it
    is then). Events carry loan data and are signed: https only, except on this machine's loopback
    where the sandbox is mounted (local runs and tests); and a host whose addresses are public, or
    in a network CONNECTOR_ENDPOINT_NETWORKS names (`endpoint_address_rule`). A host that does not
    resolve now is not refused here: its sends say so."""
    if not url:
        return None
    parts = urlsplit(url)
    if not (
        (parts.scheme == "https" and parts.hostname)
        or (parts.scheme == "http" and settings.SANDBOX_ENABLED and url_on_loopback(url))
    ):
        return "The endpoint must be an https address: events carry the lender's loan data."
    rule = endpoint_address_rule(url)
    for address in _host_addresses(parts.hostname):
        if reason := rule(address):
            return (
                f"The endpoint's address is {reason}: events go to public addresses only, or to a network "
                "named in CONNECTOR_ENDPOINT_NETWORKS."
            )
    return None


def _host_addresses(host: str) -> list[IPv4Address | IPv6Address]:
    """The addresses `host` is, or resolves to now; none when it does not resolve."""
    try:
        return [ip_address(host)]
    except ValueError:
        pass
    try:
        answers = socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return [ip_address(sockaddr[0].split("%", 1)[0]) for *_, sockaddr in answers]


def event_types_unknown(types) -> list[str]:
    """The event types in `types` that no event has (a connection asking for them would get nothing)."""
    return [str(name) for name in types if name not in EVENT_TYPES]


def products_claimed(products, *, connection_id: int | None = None) -> dict[str, str]:
    """Of `products`, those another connection works: product name -> that connection's name."""
    links = Connection.products.through.objects.filter(product__in=list(products)).exclude(connection_id=connection_id)
    return dict(links.values_list("product__name", "connection__name"))


def claimed_problem(claimed: dict[str, str]) -> str | None:
    """The refusal for products another connection works, naming it, and how to move one."""
    if not claimed:
        return None
    named = ", ".join(f"{product} is worked by {name}" for product, name in sorted(claimed.items()))
    return (
        f"One connection per product: {named}. To hand a product to this connection, use the action "
        "“Move a product to this connection” (its open orders move with it)."
    )


def connection_create(
    *,
    name: str,
    endpoint_url: str = "",
    products=(),
    notify_email: str = "",
    client_id: str = "",
    client_secret: str = "",
    signing_secret: str = "",
) -> Created:
    """A connection with its user, its OAuth client and a first signing secret (made here unless
    given: the local demo gives its public ones, `connection_demo`)."""
    if Connection.objects.filter(name=name).exists():
        raise ConnectionRefused(f"A connection named {name!r} exists already.")
    if problem := endpoint_problem(endpoint_url) or claimed_problem(products_claimed(products)):
        raise ConnectionRefused(problem)
    with transaction.atomic():
        user = get_user_model().objects.create_user(f"system.{name}"[:150])
        user.set_unusable_password()
        user.save(update_fields=["password"])
        client_secret = client_secret or generate_client_secret()
        extra = {"client_id": client_id} if client_id else {}
        application = get_application_model().objects.create(
            **extra,
            name=f"Order system {name}",
            user=user,
            client_type="confidential",
            authorization_grant_type="client-credentials",
            client_secret=client_secret,
        )
        signing_secret = signing_secret or secret_new()
        connection = Connection.objects.create(
            name=name,
            endpoint_url=endpoint_url,
            signing_secrets=signing_secret,
            user=user,
            application=application,
            notify_email=notify_email,
        )
        connection.products.set(products)
    return Created(connection, application.client_id, client_secret, signing_secret)


def product_move(*, product_id: int, connection_id: int) -> str | None:
    """The product's orders go to this connection from now on (one connection per product); the
    name of the one that had it, or None. Its open orders move too: each is assigned to this
    connection's user and this system is told of it (`order.created`); the other system's answers
    to them are refused from now on."""
    with transaction.atomic():
        connection = Connection.objects.select_for_update().filter(pk=connection_id).first()
        product = Product.objects.select_for_update().filter(pk=product_id).first()  # one move at a time
        if connection is None or product is None:
            raise ConnectionRefused("No such connection or product.")
        if product.fulfiller != CONNECTED:
            raise ConnectionRefused(f"{product.name} is not a connected product: set its fulfiller first.")
        links = Connection.products.through.objects.filter(product=product)
        link = links.select_related("connection").first()
        if link is not None and link.connection_id == connection.pk:
            return None
        previous = link.connection if link is not None else None
        links.delete()
        connection.products.add(product)
        if previous is not None:
            connection_order_hand(product_name=product.name, previous=previous, connection=connection)
    return previous.name if previous is not None else None


def connection_enable(*, connection_id: int) -> None:
    """Enable a connection again: its waiting events go out, oldest first, from the next relay round."""
    Connection.objects.filter(pk=connection_id).update(enabled=True, disabled_reason="")


# Rotation of the signing secrets: every event is signed with each secret held (Standard Webhooks'
# several signatures), so a new secret is added, given to the partner's system, and the oldest
# dropped once the system verifies with the new one; a connection always keeps one.


def signing_secret_add(*, connection_id: int) -> str:
    """Add a new signing secret to the connection, after those it holds; the new secret, which is
    shown once by the caller and never again (it is kept encrypted)."""
    with transaction.atomic():
        connection = Connection.objects.select_for_update().filter(pk=connection_id).first()
        if connection is None:
            raise ConnectionRefused("No such connection.")
        secret = secret_new()
        connection.signing_secrets = "\n".join([*connection.secrets(), secret])
        connection.save(update_fields=["signing_secrets", "updated_at"])
    return secret


def signing_secret_drop_oldest(*, connection_id: int) -> None:
    """Drop the connection's oldest signing secret; its only one is kept (refused)."""
    with transaction.atomic():
        connection = Connection.objects.select_for_update().filter(pk=connection_id).first()
        if connection is None:
            raise ConnectionRefused("No such connection.")
        held = connection.secrets()
        if len(held) < 2:
            raise ConnectionRefused(f"{connection.name}: its only secret is kept.")
        connection.signing_secrets = "\n".join(held[1:])
        connection.save(update_fields=["signing_secrets", "updated_at"])


def _replayed(rows) -> int:
    return rows.update(
        state=EventState.PENDING, attempts=0, next_attempt_at=None, failing_since=None, delivered_at=None, last_error=""
    )


def event_replay(*, event_id: int) -> bool:
    """Send one event again (the same message: the same webhook-id); False when it is waiting already."""
    rows = Event.objects.filter(pk=event_id, connection__endpoint_url__gt="").exclude(state=EventState.PENDING)
    return bool(_replayed(rows))


def events_replay_since(*, connection_id: int, since: datetime) -> int:
    """Send again every event of the connection made since `since`, in their order; how many."""
    if since > timezone.now():
        raise ConnectionRefused("That time is in the future: nothing to replay.")
    rows = Event.objects.filter(connection_id=connection_id, created_at__gte=since, connection__endpoint_url__gt="")
    return _replayed(rows.exclude(state=EventState.PENDING))


def order_take_over(*, order_id: int, user) -> None:
    """A staff member works a connected order by hand from now on: the system's answers are refused
    (it is told by `order.taken_over`), and the order is worked as a staff-worked one. Only an order
    routed to a connection (`OrderRoute`) is a connected order to take over."""
    if not OrderRoute.objects.filter(order_id=order_id).exists():
        raise ConnectionRefused("This order was never routed to a connection: take it in “Orders to work”.")
    order_take(order_id=order_id, user=user, take_over=True)


def order_hand_back(*, order_id: int, user) -> None:
    """Staff give a connected order they took over back to the system it was routed to: assigned to
    the connection's user again, the step recorded, and the system told (`order.handed_back`).
    The one way back: a release alone leaves the order with the staff."""
    route = OrderRoute.objects.select_related("connection__user").filter(order_id=order_id).first()
    if route is None:
        raise ConnectionRefused("This order was never routed to a connection: there is no system to hand it to.")
    connection = route.connection
    with transaction.atomic():
        if Order.objects.filter(pk=order_id, assigned_to=connection.user).exists():
            raise ConnectionRefused(f"{connection.name} works this order already: there is nothing to hand back.")
        order = order_take(order_id=order_id, user=connection.user, take_over=True)
        if order.status in FINAL_STATUSES:
            raise ConnectionRefused("This order is done: there is nothing to hand back.")
        step_record(order, "handed_back", f"to {connection.name}", actor=user.get_username())
        event_store(connection=connection, order=order, event_type="order.handed_back", data={})


# The local demo's connection (`manage.py connection_demo`, `make demo`): public values, refused
# with DJANGO_DEBUG off, which examples/order_system/ uses by default.
DEMO_NAME = "demo-order-system"
DEMO_CLIENT_ID = "demo-order-system"
DEMO_CLIENT_SECRET = "demo-order-system-secret-1"  # noqa: S105 - public demo value, refused outside DEBUG
DEMO_SIGNING_SECRET = "whsec_ZGVtby1vcmRlci1zeXN0ZW0tc2lnbmluZy1zZWNyZXQ="  # noqa: S105 - likewise
DEMO_ENDPOINT = "http://127.0.0.1:8001/events"


def demo_secrets_held(connection: Connection) -> list[str]:
    """Which of the demo's public secrets the connection holds ("client secret", "signing secret");
    the client secret is checked only for the demo's client id (its hash costs a check)."""
    from django.contrib.auth.hashers import check_password

    held = []
    application = connection.application
    if application is not None and application.client_id == DEMO_CLIENT_ID:
        stored = application.client_secret
        if stored == DEMO_CLIENT_SECRET or check_password(DEMO_CLIENT_SECRET, stored):
            held.append("client secret")
    if DEMO_SIGNING_SECRET in connection.secrets():
        held.append("signing secret")
    return held


def connection_demo(*, product_name: str) -> Connection:
    """The local demo: `product_name` made a connected product, worked by the demo order system,
    unless another connection works it already (the one returned: one connection per product)."""
    if not settings.DEBUG:
        raise ConnectionRefused("The demo connection's secrets are public: with DJANGO_DEBUG off, make your own.")
    product = Product.objects.filter(name=product_name).first()
    if product is None:
        raise ConnectionRefused(f"No product named {product_name!r}: pull the products first.")
    with transaction.atomic():
        product_fulfiller_set(name=product.name, fulfiller=CONNECTED)
        connection = Connection.objects.filter(name=DEMO_NAME).first()
        if connection is None:
            connection = connection_create(
                name=DEMO_NAME,
                endpoint_url=DEMO_ENDPOINT,
                client_id=DEMO_CLIENT_ID,
                client_secret=DEMO_CLIENT_SECRET,
                signing_secret=DEMO_SIGNING_SECRET,
            ).connection
        if claimed := products_claimed([product], connection_id=connection.pk):
            # The partner moved the product to its own connection: a rerun never takes it back.
            return Connection.objects.get(name=claimed[product.name])
        connection.products.add(product)
    return connection


# The advisory lock (PostgreSQL) held by the one writer of feed positions at a time.
_POSITIONS_LOCK = 0x70A51710


def events_positions_stamp(*, connection: Connection) -> int:
    """Give the connection's committed events that have no feed position one, each after every
    position given so far, in the order of their ids; how many. One writer at a time (an advisory
    lock on PostgreSQL; SQLite has one writer), and an event is stamped only once it is committed,
    so positions are given in the order events became visible: a cursor that passed a position
    never misses an event stamped later, whatever order transactions committed in."""
    if not Event.objects.filter(connection=connection, position__isnull=True).exists():
        return 0
    table = db_connection.ops.quote_name(Event._meta.db_table)
    with transaction.atomic(), db_connection.cursor() as cursor:
        if db_connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_POSITIONS_LOCK])
        cursor.execute(
            f"UPDATE {table} SET position = base.highest + unstamped.number"  # noqa: S608 (names, not input)
            f" FROM (SELECT COALESCE(MAX(position), 0) AS highest FROM {table}) AS base,"
            f" (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS number FROM {table}"
            "   WHERE connection_id = %s AND position IS NULL) AS unstamped"
            f" WHERE {table}.id = unstamped.id",
            [connection.pk],
        )
        return cursor.rowcount


def events_feed(*, connection: Connection, after: int = 0, limit: int = FEED_PAGE) -> list[Event]:
    """The connection's events after the cursor `after` (a feed position), in the order of their
    positions, the new ones stamped first (`events_positions_stamp`): every event once, none skipped."""
    events_positions_stamp(connection=connection)
    return events_after(connection=connection, after=after, limit=limit)
