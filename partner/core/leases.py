"""Leases: which worker holds a row (a notification, a tracker), and which rows were left behind.

The inbox and the fulfillment take their rows the same way. A worker takes a row with one
UPDATE that only matches while the row's lease is free, so the database decides between two
workers (SQLite and PostgreSQL alike), and sets `claimed_until`; when the worker dies, the
lease runs out and the row can be taken again. A row that waits longer than STALL_SECONDS
with nobody holding it had its message lost (a broker restart, a worker killed before it
took the row): each app's periodic sweep hands such rows to the broker again. The two apps
sweep their own tables with their own task because each owns its rows and its queue; the
rule of when a row is taken and when it is stalled lives here, once.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class LeasedModel(models.Model):
    """A row a worker takes for a while: `claimed_until` is when its lease runs out (None: free)."""

    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


def lease_seconds() -> int:
    """How long a worker holds a row: past the task's hard time limit, so a live task never loses it."""
    return int(settings.CELERY_TASK_TIME_LIMIT * 1.2) + 1


def lease_free(now: datetime) -> Q:
    """Rows nobody holds at `now`."""
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def lease_take(queryset: models.QuerySet, **updates) -> bool:
    """Take the row(s) of `queryset` whose lease is free, applying `updates` in the same UPDATE.

    True when this caller got it; False when another worker holds it or nothing matched.
    """
    now = timezone.now()
    until = now + timedelta(seconds=lease_seconds())
    return queryset.filter(lease_free(now)).update(claimed_until=until, **updates) > 0


def lease_release(queryset: models.QuerySet, **updates) -> int:
    """Give the row(s) back, applying `updates` in the same UPDATE."""
    return queryset.update(claimed_until=None, **updates)


def stalled_before() -> datetime:
    """Rows untouched since this moment, with no lease held, were left behind."""
    return timezone.now() - timedelta(seconds=settings.STALL_SECONDS)
