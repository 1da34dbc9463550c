"""What the connector reads: a connection's health, the events feed, the orders a system may see."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from partner.catalog import response_forms
from partner.catalog.models import Product
from partner.connector.events import request_loan_fields
from partner.connector.models import Connection, Event, EventState
from partner.fulfillment.models import Order
from partner.platform import formats

FEED_PAGE = 100


@dataclass(frozen=True)
class Health:
    last_success_at: datetime | None
    last_failure_at: datetime | None
    failing_since: datetime | None
    consecutive_failures: int
    backlog: int  # events waiting to be sent
    failed: int  # events given up (replay sends them again)
    oldest_waiting_at: datetime | None


def connection_health(connection: Connection) -> Health:
    waiting = Event.objects.filter(connection=connection, state=EventState.PENDING)
    oldest = waiting.order_by("pk").values_list("created_at", flat=True).first()
    return Health(
        last_success_at=connection.last_success_at,
        last_failure_at=connection.last_failure_at,
        failing_since=connection.failing_since,
        consecutive_failures=connection.consecutive_failures,
        backlog=waiting.count(),
        failed=Event.objects.filter(connection=connection, state=EventState.FAILED).count(),
        oldest_waiting_at=oldest,
    )


def events_after(*, connection: Connection, after: int = 0, limit: int = FEED_PAGE) -> list[Event]:
    """The connection's events whose feed position is after the cursor `after`, in position order
    (stamped by `services.events_positions_stamp`; an event not yet stamped is not in the feed)."""
    events = Event.objects.filter(connection=connection, position__gt=after).order_by("position")
    return list(events[: max(1, min(limit, FEED_PAGE))])


def connection_orders(connection: Connection) -> QuerySet:
    """The orders routed to the connection when they arrived (`OrderRoute`), whatever its products
    are now: a product switched back to staff work or handed on takes none of them away, and gives
    it none of the orders it was not routed."""
    return (
        Order.objects.filter(connector_route__connection=connection)
        .select_related("assigned_to", "ordered_by__company")
        .order_by("-updated_at", "-pk")
    )


def connection_health_warnings() -> list[str]:
    """For /healthz/ready: connections disabled after a day of failed retries, or failing now."""
    warnings = []
    for name, enabled, since in (
        Connection.objects.exclude(endpoint_url="")
        .filter(Q(enabled=False) | ~Q(failing_since=None))
        .values_list("name", "enabled", "failing_since")
    ):
        if not enabled:
            warnings.append(f"connection {name} is disabled: its events wait (see the connector's admin)")
        else:
            warnings.append(f"connection {name} failing since {since:%Y-%m-%d %H:%M} UTC")
    return warnings


def connection_products(connection: Connection) -> QuerySet:
    """The products the connection works, by name."""
    return Product.objects.filter(pk__in=connection.products.values("pk")).order_by("name")


def delivery_loan_schema(product: Product, *, request_type: str) -> dict:
    """The JSON Schema of a delivery's `loan` for the product's orders of `request_type`: each loan
    field its response data entitlement allows, described by the product's response form (the one
    staff admins edit; the seed's for the fields the spec describes); a field nothing describes is
    any object. The same schemas check every delivery (`staff.services.loan_problems`)."""
    allowed = formats.response_loan_fields(product.raw or {}, request_type=request_type)
    schemas = response_forms.loan_field_schemas(product.response_form, allowed)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {name: schema or {"type": "object"} for name, schema in schemas.items()},
        "additionalProperties": allowed is None,
    }


def product_forms(product: Product) -> list[dict]:
    """For each request type of the product: the loan paths an order's request carries
    (`order.created`'s `request.loan`; None: as the service sends it) and the delivery's loan form."""
    forms = []
    for request_type in product.request_types or ["NEW_REQUEST"]:
        paths = request_loan_fields(product.raw or {}, request_type=request_type, tell=False)
        forms.append(
            {
                "request_type": request_type,
                "request_fields": None if paths is None else [".".join(("loan", *path)) for path in paths],
                "delivery_loan": delivery_loan_schema(product, request_type=request_type),
            }
        )
    return forms
