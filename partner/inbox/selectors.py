"""Reads of the inbox for the dashboard: its backlog (notifications stored and not yet processed), and the
notifications of a type we do not handle (stored `ignored`)."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Min
from django.utils import timezone

from partner.inbox.metrics import BACKLOG_STATES
from partner.inbox.models import Notification, NotificationState


@dataclass(frozen=True)
class Backlog:
    counts: dict[str, int]  # every backlog state (the metrics' BACKLOG_STATES) -> notifications
    oldest_at: datetime | None  # when the oldest of them was received

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def oldest_age(self, now: datetime | None = None) -> float | None:
        """Seconds the oldest has waited (None: no backlog)."""
        if self.oldest_at is None:
            return None
        return max(0.0, ((now or timezone.now()) - self.oldest_at).total_seconds())


def inbox_backlog() -> Backlog:
    """The backlog by state and its oldest notification: one grouped query."""
    rows = (
        Notification.objects.filter(state__in=BACKLOG_STATES)
        .values_list("state")
        .annotate(count=Count("pk"), oldest=Min("received_at"))
        .order_by()
    )
    counts = dict.fromkeys((state.value for state in BACKLOG_STATES), 0)
    oldest = None
    for state, count, received_at in rows:
        counts[state] = count
        oldest = received_at if oldest is None else min(oldest, received_at)
    return Backlog(counts=counts, oldest_at=oldest)


@dataclass(frozen=True)
class Unhandled:
    """Notifications of a type we do not handle received since a moment, by type."""

    types: list[tuple[str, str, int]]  # (resource type, event type, notifications), the most first

    @property
    def total(self) -> int:
        return sum(count for _, _, count in self.types)


def notifications_unhandled(*, since: datetime) -> Unhandled:
    """The notifications stored `ignored` (a resource or event type we do not handle) received since
    `since`, by type: one grouped query."""
    rows = (
        Notification.objects.filter(state=NotificationState.IGNORED, received_at__gte=since)
        .values_list("resource_type", "event_type")
        .annotate(count=Count("pk"))
        .order_by("-count", "resource_type", "event_type")
    )
    return Unhandled(types=list(rows))
