"""Leases: which worker holds a row (a notification, an order), and which rows were left behind.

The inbox and the fulfillment take their rows the same way. A worker takes a row with one
UPDATE that only matches while the row's lease is free, so the database decides between two
workers (SQLite and PostgreSQL alike), and sets `claimed_until` LEASE_SECONDS ahead. While it
works, the process's renewing thread renews the lease every third of that (`lease_kept`); when the worker dies, the
renewals stop and the row is free again within LEASE_SECONDS, not after a task's whole time
limit. Every write of a lease matches the value its worker last wrote (`Lease`), so a worker
whose lease ran out and was taken by another writes nothing more, and it confirms its lease in the
database right before each call that changes another system's state (`Lease.confirm`, the fence).
A lease that ran out while still set (`claimed_until` in the past, never released) is the mark
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
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, models
from django.db.models import Case, Exists, F, Q, When
from django.utils import timezone

from partner.core.retries import outage_of
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


class LeaseLost(Exception):
    """This worker no longer holds the row: its lease ran out and another worker may have taken it,
    or a renewal failed. Whatever it was doing stops before it changes anything more."""


class Lease:
    """One worker's hold on one row: `until` is when it runs out, as this worker last wrote it.

    Every write of the lease matches that value (the row's `claimed_until`), so a worker whose lease
    ran out and was taken by another changes nothing: its renewal, its fence and its release match
    no row. A renewal that fails (no row matched, or the database away) marks the lease `lost`, and
    `confirm` refuses from then on: a worker cut off from the database stops instead of going on
    with a lease it can no longer prove.
    """

    def __init__(self, model: type[models.Model], pk, until: datetime):
        self._rows = model._default_manager.filter(pk=pk)
        self.label = f"{model._meta.verbose_name} {pk}"
        self.until = until
        self.lost = False
        self._lock = threading.Lock()
        # When the lease runs out by this worker's own monotonic clock (`held`).
        self._held_until = time.monotonic() + (until - timezone.now()).total_seconds()

    def _mine(self) -> models.QuerySet:
        return self._rows.filter(claimed_until=self.until)

    def _renewal(self, write: Callable[[datetime, datetime], object]):
        """One renewal, under the lease's lock, unless the lease is lost already (None): `write(now,
        until)` writes it in the database and answers something true when the row was this worker's.
        The lease then runs to `until`, on the database's clock and this worker's; otherwise, or when
        `write` raises (the database away), it is lost. What `write` answered."""
        with self._lock:
            if self.lost:
                return None
            started, now = time.monotonic(), timezone.now()
            until = lease_until(now)
            try:
                written = write(now, until)
            except Exception:
                self.lost = True
                raise
            if written:
                self.until = until
                self._held_until = started + lease_seconds()
            else:
                self.lost = True
            return written

    def renew(self, **updates) -> bool:
        """Push the end of the lease LEASE_SECONDS ahead (with `updates`); False when it is lost."""
        return bool(self._renewal(lambda now, until: self._mine().update(claimed_until=until, **updates) > 0))

    def confirm(self, **updates) -> None:
        """The fence before a call that changes another system's state: confirm in the database that
        this worker still holds the row (and renew it, so the call has a whole lease to run in), or
        raise LeaseLost. `updates` are written in the same statement."""
        if not self.renew(**updates):
            raise LeaseLost(f"the lease of {self.label} is no longer this worker's")

    def confirm_taken(self, **updates) -> models.Model | None:
        """The fence (`confirm`) of a lease another transaction took and may not have committed yet (a
        relay publishes its tasks before it commits, `partner.core.enqueue.rows_relay`), with `updates`,
        in one UPDATE ... RETURNING: the row as it left it, or None (the lease marked lost) when it is
        not this worker's. One statement where locking the row, reading it and confirming were four.

        PostgreSQL (READ COMMITTED) skips a row whose version visible to the statement fails its WHERE
        without waiting for the row's lock: an UPDATE matching only this lease would miss the taking
        that has not committed (the row still free in its snapshot), and the work would wait for the
        lease to run out. So the UPDATE matches the row while its lease is this worker's or free (what
        it was before the taking), which makes it wait for a taking under way and re-check on the
        committed row; and it writes only where the lease is this worker's: on a row still free (the
        taking rolled back) or taken by another meanwhile, nothing changes and the answer is None."""
        model = self._rows.model

        def write(now: datetime, until: datetime) -> models.Model | None:
            mine = Q(claimed_until=self.until)  # read under the lock: the renewing thread moves it
            writes = {
                name: Case(When(mine, then=value), default=F(name), output_field=model._meta.get_field(name))
                for name, value in {"claimed_until": until, **updates}.items()
            }
            rows = update_returning(self._rows.filter(mine | lease_free(now)), **writes)
            return rows[0] if rows and rows[0].claimed_until == until else None

        return self._renewal(write)

    def held(self) -> None:
        """The fence on this worker's own clock, for the instant before a call's first byte leaves
        (`partner.core.outbound.fenced`): LeaseLost once the lease may have run out since this worker
        last proved it in the database, a tenth of LEASE_SECONDS early. A worker paused past its lease
        (SIGSTOP, a frozen VM) pauses its renewals too, so a call confirmed before the pause is not
        sent after it, when another worker may hold the order."""
        if self.lost or time.monotonic() >= self._held_until - lease_seconds() / 10:
            raise LeaseLost(f"the lease of {self.label} ran out on this worker's clock")

    def confirm_with(self, rows: models.QuerySet, **updates) -> None:
        """The fence, written with a record of what is about to happen, for rows that are there while
        this worker holds the lease (the leased row, a document of it): the fenced write
        (`_fenced_update`), where rows that match nothing can only mean the lease is lost: LeaseLost.
        Unlike `confirm` it does not renew the lease (the renewal thread does)."""
        self._fenced_update(rows, updates, none_matched_is_lost=True)

    def confirm_where(self, rows: models.QuerySet, **updates) -> bool:
        """The fenced write for rows a condition may have left meanwhile (a delivery no longer
        pending): True when written; False (nothing written, the lease kept) when this worker holds
        the lease and `rows` match nothing, told apart from the lease lost (LeaseLost) by one more read."""
        return self._fenced_update(rows, updates, none_matched_is_lost=False)

    def _fenced_update(self, rows: models.QuerySet, updates: dict, *, none_matched_is_lost: bool) -> bool:
        """Apply `updates` to `rows` (of any model) only while this worker holds the lease, in one
        statement. When nothing was written: False if the lease is still held and the caller allows
        it, else the lease is marked lost and LeaseLost raised."""
        with self._lock:
            if not self.lost and rows.filter(Exists(self._mine())).update(**updates):
                return True
            if not none_matched_is_lost and not self.lost and self._mine().exists():
                return False
            self.lost = True
            raise LeaseLost(f"the lease of {self.label} is no longer this worker's")

    def release_unless(self, busy: Q, **updates) -> bool:
        """Give the row back unless `busy` (a condition on the row: work waits for it) holds, with
        `updates`, in one UPDATE: True when released; False when `busy` held (the lease is kept and
        renewed: the caller does the work that waits, then tries again). Raises LeaseLost when the row
        is no longer this worker's. Because the condition is checked in the statement that frees the
        row, nothing committed before the release is left behind by it: whoever stores work later
        finds the row free and takes it."""
        with self._lock:
            if self.lost:
                raise LeaseLost(f"the lease of {self.label} is no longer this worker's")
            if self._mine().filter(~busy).update(claimed_until=None, **updates):
                self.lost = True  # from here on, nothing renews it
                return True
        self.confirm()
        return False

    def release(self, **updates) -> bool:
        """Give the row back, applying `updates` in the same UPDATE; False when it was no longer ours
        (nothing written)."""
        with self._lock:
            if self.lost:
                return False
            self.lost = True  # from here on, nothing renews it
            return self._mine().update(claimed_until=None, **updates) > 0


def lease_give_back(lease: Lease, **updates) -> bool:
    """`lease.release(**updates)`, except when the database (or another service of ours) is away:
    then nothing is written and the lease runs out instead, and the row is handed back as a dead
    worker's is (`leases_expired_hand_back`). False when nothing was written."""
    try:
        return lease.release(**updates)
    except Exception as exc:
        away = outage_of(exc)
        if away is None:
            raise
        logger.warning("%s: not given back, %s is away; its lease runs out instead (%s)", lease.label, away, exc)
        return False


def lease_take(queryset: models.QuerySet, **updates) -> Lease | None:
    """Take the one row of `queryset` if its lease is free, applying `updates` in the same UPDATE.

    The lease, or None when another worker holds it or nothing matched.
    """
    taken = lease_take_one(queryset, **updates)
    return taken[1] if taken else None


def lease_take_one(queryset: models.QuerySet, **updates) -> tuple[models.Model, Lease] | None:
    """Take the one row of `queryset` as `lease_take` does; the row as the UPDATE left it and the
    lease, or None: one statement (`update_returning`) where taking and reading the row would be two."""
    now = timezone.now()
    until = lease_until(now)
    rows = update_returning(queryset.filter(lease_free(now)), claimed_until=until, **updates)
    if not rows:
        return None
    row = rows[0]
    return row, Lease(type(row), row.pk, until)


def lease_of_created(row: models.Model) -> Lease:
    """The lease of a row this worker created taken (its `claimed_until` set in the INSERT)."""
    return Lease(type(row), row.pk, row.claimed_until)


class _Keeper:
    """The one thread of a process that renews the leases held in `lease_kept` blocks, each every
    third of LEASE_SECONDS from its last renewal, named "lease-renewal".

    A thread per block cost a thread's start and join per task: nothing on a quiet worker, but in a
    worker of 64 threads that all want the GIL, 20-40 ms of each task's time, on every arrival, run
    and event send (docs/performance.md, "The leases' one renewing thread"). Holding a lease here is
    a dictionary entry; the thread sleeps until the first renewal due and is woken early only when a
    lease comes due before that. A block that ends while its lease is being renewed waits for that
    renewal, so nothing is renewed once its block has ended (as the thread's join made sure); when
    the last lease is dropped, the thread closes the database connection its renewals opened."""

    # A block that ends while its lease is being renewed waits this long at most for the renewal (a
    # database that does not answer): as long as the thread's join waited.
    DROP_WAIT_SECONDS = 10.0

    def __init__(self):
        self._forget()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """No lease held and no thread yet: at the start, and in a forked child, which has neither the
        parent's thread nor a lock another of the parent's threads may have held at the fork."""
        self._lock = threading.Condition()
        self._due: dict[Lease, float] = {}  # lease -> when (monotonic) it is renewed next
        self._renewing: Lease | None = None
        self._wakes_at = 0.0
        self._connected = False  # its renewals opened this thread's database connection
        self._running = False

    def hold(self, lease: Lease) -> None:
        due = time.monotonic() + lease_seconds() / 3
        with self._lock:
            if not self._running:
                self._running, self._wakes_at = True, due
                threading.Thread(target=self._run, name="lease-renewal", daemon=True).start()
            self._due[lease] = due
            if due < self._wakes_at:
                self._lock.notify_all()

    def drop(self, lease: Lease) -> None:
        with self._lock:
            self._due.pop(lease, None)
            self._lock.wait_for(lambda: self._renewing is not lease, timeout=self.DROP_WAIT_SECONDS)
            if not self._due and self._connected:
                self._lock.notify_all()  # the thread closes its connection

    def _next(self) -> Lease | None:
        """Wait until a lease is due: that lease, marked as being renewed; or None when none is held
        and the thread's connection is open (to be closed)."""
        with self._lock:
            while True:
                if not self._due and self._connected:
                    self._connected = False
                    return None
                now = time.monotonic()
                lease, due = min(self._due.items(), key=lambda item: item[1], default=(None, now + lease_seconds() / 3))
                if lease is not None and due <= now:
                    self._renewing = lease
                    return lease
                self._wakes_at = due
                self._lock.wait(due - now)

    def _run(self) -> None:
        while True:
            lease = self._next()
            if lease is None:
                if not connection.allow_thread_sharing:
                    connection.close()
                continue
            try:
                renewed = lease.renew()
                if not renewed:
                    logger.warning("lease lost: another worker holds the row, or it was released")
            except Exception as exc:  # the database away: the lease is lost, the work stops at its next fence
                renewed = False
                logger.warning("lease renewal failed (%s): the work stops at its next call", type(exc).__name__)
                if not connection.allow_thread_sharing:
                    connection.close()  # this thread's own: the next renewal opens a new one
            with self._lock:
                self._renewing, self._connected = None, True
                if renewed and lease in self._due:
                    self._due[lease] = time.monotonic() + lease_seconds() / 3
                else:
                    self._due.pop(lease, None)
                self._lock.notify_all()


_keeper = _Keeper()


@contextlib.contextmanager
def lease_kept(lease: Lease):
    """Renew `lease` every third of LEASE_SECONDS until the block ends (by the process's one renewing
    thread, `_Keeper`). A renewal that fails leaves the lease lost (`Lease.renew`): the block's next
    fence (`Lease.confirm`) stops its work."""
    _keeper.hold(lease)
    try:
        yield lease
    finally:
        _keeper.drop(lease)


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
