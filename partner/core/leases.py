"""Leases: which worker holds a row (a notification, an order), and which rows were left behind.

The inbox and the fulfillment take their rows the same way. A worker takes a row with one
UPDATE that only matches while the row's lease is free, so the database decides between two
workers (SQLite and PostgreSQL alike), and sets `claimed_until` LEASE_SECONDS ahead. While it
works, a thread renews the lease every third of that (`lease_kept`); when the worker dies, the
renewals stop and the row is free again within LEASE_SECONDS, not after a task's whole time
limit. A lease that ran out while still set (`claimed_until` in the past, never released) is the mark
of a worker that died holding the row: every worker's housekeeping loop (the inbox relay)
looks for such rows every third of LEASE_SECONDS and hands them back at once
(`leases_expired_hand_back`), whatever the broker does with the dead worker's message (RabbitMQ
redelivers it at once, Redis only after its visibility timeout). A row that waits longer than
STALL_SECONDS with nobody holding it had its message lost (a broker restart, a worker killed
before it took the row): each app's periodic sweep hands such rows to the broker again. Each
app hands back and sweeps its own rows, because each owns its rows and its queue; the rule of
when a row is taken, when it was left by a dead worker and when it is stalled lives here, once.
"""

import contextlib
import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from partner.core.returning import update_returning

logger = logging.getLogger(__name__)


class LeasedModel(models.Model):
    """A row a worker takes for a while: `claimed_until` is when its lease runs out (None: free)."""

    claimed_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


def lease_seconds() -> float:
    """How long a lease lasts unless its worker renews it (it does, every third of this, while it works)."""
    return float(settings.LEASE_SECONDS)


def lease_until(now: datetime | None = None) -> datetime:
    """When a lease taken now runs out (the `claimed_until` of a row taken, or created taken)."""
    return (now or timezone.now()) + timedelta(seconds=lease_seconds())


def lease_free(now: datetime, *, through: str = "") -> Q:
    """Rows nobody holds at `now` (`through`: the path to the leased row, e.g. "order__")."""
    return Q(**{f"{through}claimed_until__isnull": True}) | Q(**{f"{through}claimed_until__lt": now})


def lease_take(queryset: models.QuerySet, **updates) -> bool:
    """Take the row(s) of `queryset` whose lease is free, applying `updates` in the same UPDATE.

    True when this caller got it; False when another worker holds it or nothing matched.
    """
    now = timezone.now()
    return queryset.filter(lease_free(now)).update(claimed_until=lease_until(now), **updates) > 0


def lease_take_one(queryset: models.QuerySet, **updates) -> models.Model | None:
    """Take the one row of `queryset` as `lease_take` does, and return it as the UPDATE left it, or
    None: one statement (`update_returning`) where taking and reading the row would be two."""
    now = timezone.now()
    rows = update_returning(queryset.filter(lease_free(now)), claimed_until=lease_until(now), **updates)
    return rows[0] if rows else None


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
                queryset.filter(claimed_until__isnull=False).update(claimed_until=lease_until())
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


def leases_expired_free(queryset: models.QuerySet, *, limit: int = 100, **updates) -> list:
    """Free the rows of `queryset` whose lease ran out without being released (their worker died),
    applying `updates`; the primary keys freed. Each row is freed for one caller only, however many
    workers look at once: the UPDATE matches only the lease value that was read."""
    freed = []
    now = timezone.now()
    for pk, until in queryset.filter(claimed_until__lt=now).values_list("pk", "claimed_until")[:limit]:
        if queryset.filter(pk=pk, claimed_until=until).update(claimed_until=None, **updates):
            freed.append(pk)
    return freed


# name -> a function that frees its app's rows left by dead workers and hands them to the broker
# again (how many). Registered by each app in its ready(): this layer knows no app.
_hand_backs: dict[str, Callable[[], int]] = {}


def lease_hand_back_register(name: str, hand_back: Callable[[], int]) -> None:
    _hand_backs[name] = hand_back


def leases_expired_hand_back() -> int:
    """Hand every row left by a dead worker back to the broker; how many."""
    total = 0
    for name, hand_back in _hand_backs.items():
        count = hand_back()
        if count:
            logger.warning("%d %s left by a worker that stopped renewing its lease: handed back", count, name)
        total += count
    return total


def stalled_before() -> datetime:
    """Rows untouched since this moment, with no lease held, were left behind."""
    return timezone.now() - timedelta(seconds=settings.STALL_SECONDS)
