"""Leases: which worker holds a row (a notification, a tracker), and which rows were left behind.

The inbox and the fulfillment take their rows the same way. A worker takes a row with one
UPDATE that only matches while the row's lease is free, so the database decides between two
workers (SQLite and PostgreSQL alike), and sets `claimed_until` LEASE_SECONDS ahead. While it
works, a thread renews the lease every third of that (`lease_kept`); when the worker dies, the
renewals stop and the row is free again within LEASE_SECONDS, not after a task's whole time
limit. A row that waits longer than STALL_SECONDS with nobody holding it had its message lost
(a broker restart, a worker killed before it took the row): each app's periodic sweep hands
such rows to the broker again. The two apps
sweep their own tables with their own task because each owns its rows and its queue; the
rule of when a row is taken and when it is stalled lives here, once.
"""

import contextlib
import logging
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

logger = logging.getLogger(__name__)


class LeasedModel(models.Model):
    """A row a worker takes for a while: `claimed_until` is when its lease runs out (None: free)."""

    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


def lease_seconds() -> float:
    """How long a lease lasts unless its worker renews it (it does, every third of this, while it works)."""
    return float(settings.LEASE_SECONDS)


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


@contextlib.contextmanager
def lease_kept(queryset: models.QuerySet):
    """Renew the lease of the row(s) of `queryset` (taken by this worker) until the block ends."""
    stop = threading.Event()

    def renew():
        renewed = False
        try:
            while not stop.wait(lease_seconds() / 3):
                until = timezone.now() + timedelta(seconds=lease_seconds())
                queryset.filter(claimed_until__isnull=False).update(claimed_until=until)
                renewed = True
        except Exception as exc:  # the database away: the work goes on, the lease may run out
            logger.warning("lease renewal stopped (%s)", type(exc).__name__)
        finally:
            if renewed and not connection.allow_thread_sharing:
                connection.close()  # this thread's own connection (a shared one belongs to its owner)

    thread = threading.Thread(target=renew, name="lease-renewal", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def lease_remaining(queryset: models.QuerySet) -> float:
    """Seconds until the lease of the row of `queryset` runs out (0 when it is free)."""
    until = queryset.values_list("claimed_until", flat=True).first()
    return max(0.0, (until - timezone.now()).total_seconds()) if until else 0.0


def stalled_before() -> datetime:
    """Rows untouched since this moment, with no lease held, were left behind."""
    return timezone.now() - timedelta(seconds=settings.STALL_SECONDS)
