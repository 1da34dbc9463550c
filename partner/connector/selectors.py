"""What the connector reads: a connection's health, the events feed, the orders a system may see."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from partner.connector.models import Connection, Event, EventState
from partner.fulfillment.models import Order

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
    """The orders of the connection's products that reached a worker (acknowledged or later)."""
    names = list(connection.products.values_list("name", flat=True))
    return (
        Order.objects.filter(product_name__in=names, staff_worked=True)
        .filter(~Q(prepared_at=None))
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
