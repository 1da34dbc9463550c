"""Leases: one worker holds a row at a time, and a dead worker's row is free when its lease runs out."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from partner.core.leases import LeaseLost, lease_kept, lease_seconds, lease_take
from partner.fulfillment.models import Order
from tests.helpers.waiting import wait_for


@pytest.mark.django_db
def test_a_held_row_cannot_be_taken_until_it_is_released():
    order = Order.objects.create(transaction_id="t-lease")
    rows = Order.objects.filter(pk=order.pk)
    lease = lease_take(rows, attempts=1)
    assert lease is not None
    assert lease_take(rows, attempts=2) is None  # another worker holds it
    order.refresh_from_db()
    assert order.attempts == 1
    assert order.claimed_until == lease.until > timezone.now() + timedelta(seconds=lease_seconds() - 5)

    assert lease.release(last_error="done") is True
    order.refresh_from_db()
    assert (order.claimed_until, order.last_error) == (None, "done")
    assert lease_take(rows) is not None


@pytest.mark.django_db
def test_an_expired_lease_is_free(settings):
    order = Order.objects.create(transaction_id="t-expired", claimed_until=timezone.now() - timedelta(seconds=1))
    assert lease_take(Order.objects.filter(pk=order.pk)) is not None


@pytest.mark.django_db
def test_a_lease_another_worker_took_after_it_ran_out_writes_nothing_more():
    """The fence: a worker whose lease ran out and was taken by another can neither confirm, renew,
    write beside its fence, nor release it."""
    order = Order.objects.create(transaction_id="t-fenced")
    rows = Order.objects.filter(pk=order.pk)
    mine = lease_take(rows)
    mine.confirm()  # still mine: confirmed (and renewed)
    # Cut off past the end of its lease: another worker takes the order.
    rows.update(claimed_until=timezone.now() - timedelta(seconds=1))
    theirs = lease_take(rows)
    assert theirs is not None

    with pytest.raises(LeaseLost):
        mine.confirm()
    with pytest.raises(LeaseLost):
        mine.confirm_with(rows, last_error="written by a worker that lost its lease")
    assert mine.renew() is False and mine.release(last_error="x") is False
    order.refresh_from_db()
    assert order.claimed_until == theirs.until and order.last_error == ""  # the other worker's, untouched
    theirs.confirm_with(rows, last_error="the holder writes")
    order.refresh_from_db()
    assert order.last_error == "the holder writes"
    # For rows that may have changed meanwhile: the holder learns they match nothing (no write, the
    # lease kept); the worker that lost it is told so.
    assert theirs.confirm_where(rows.filter(status="nothing of the kind"), last_error="no") is False
    assert theirs.confirm_where(rows, last_error="still the holder") is True and not theirs.lost
    with pytest.raises(LeaseLost):
        mine.confirm_where(rows, last_error="x")
    order.refresh_from_db()
    assert order.last_error == "still the holder"
    # Rows that must be there (`confirm_with`): matching nothing is the lease lost, not an answer.
    with pytest.raises(LeaseLost):
        theirs.confirm_with(rows.filter(status="nothing of the kind"), last_error="no")
    assert theirs.lost and theirs.renew() is False
    order.refresh_from_db()
    assert order.last_error == "still the holder"


@pytest.mark.django_db
def test_a_lease_is_released_only_where_no_work_waits_and_only_while_held():
    order = Order.objects.create(transaction_id="t-release-unless", last_error="work waits")
    rows = Order.objects.filter(pk=order.pk)
    lease = lease_take(rows)
    waits = Q(last_error="work waits")
    assert lease.release_unless(waits) is False  # kept: the holder does the work first
    order.refresh_from_db()
    assert order.claimed_until == lease.until
    rows.update(last_error="")
    assert lease.release_unless(waits, attempts=7) is True
    order.refresh_from_db()
    assert (order.claimed_until, order.attempts) == (None, 7)

    stale = lease_take(rows)
    rows.update(claimed_until=timezone.now() - timedelta(seconds=1))
    taken = lease_take(rows)
    with pytest.raises(LeaseLost):
        stale.release_unless(waits)
    order.refresh_from_db()
    assert order.claimed_until == taken.until  # not freed: another worker holds it


@pytest.mark.django_db(transaction=True)
def test_a_working_worker_renews_its_short_lease_and_a_dead_one_loses_it(settings):
    settings.LEASE_SECONDS = 0.6  # renewed every 0.2 s
    order = Order.objects.create(transaction_id="t-renewed")
    rows = Order.objects.filter(pk=order.pk)
    lease = lease_take(rows)
    first = lease.until
    with lease_kept(lease):
        # Renewed twice: the lease now ends after the first one would have.
        renewals = wait_for(lambda: rows.get().claimed_until > first + timedelta(seconds=0.3), timeout=10)
        assert renewals and lease_take(rows) is None  # another worker still cannot take it
        assert not lease.lost
    # The worker is gone (no more renewals): the lease runs out within LEASE_SECONDS.
    assert wait_for(lambda: lease_take(rows) is not None, timeout=10, message="the lease to run out")


@pytest.mark.django_db(transaction=True)
def test_a_renewal_that_finds_the_lease_taken_leaves_it_lost(settings):
    """A worker paused past its lease (cut off, swapped out) finds at its next renewal that another
    worker holds the row: its lease is lost, and its next fence refuses."""
    settings.LEASE_SECONDS = 0.6
    order = Order.objects.create(transaction_id="t-lost")
    rows = Order.objects.filter(pk=order.pk)
    lease = lease_take(rows)
    with lease_kept(lease):
        rows.update(claimed_until=timezone.now() + timedelta(seconds=30))  # another worker's now
        assert wait_for(lambda: lease.lost, timeout=10, message="the renewal to find the lease lost")
        with pytest.raises(LeaseLost):
            lease.confirm()


@pytest.mark.django_db(transaction=True)
def test_rows_left_by_a_dead_worker_are_handed_back_once_and_nothing_else_is(tasks_sent):
    from partner.core.leases import leases_expired_hand_back
    from partner.fulfillment.models import OrderStatus
    from partner.inbox.models import Notification, NotificationState

    past, future = timezone.now() - timedelta(seconds=1), timezone.now() + timedelta(seconds=30)
    left = Order.objects.create(transaction_id="t-left", status=OrderStatus.IN_PROGRESS, claimed_until=past)
    Order.objects.create(transaction_id="t-held", status=OrderStatus.IN_PROGRESS, claimed_until=future)
    Order.objects.create(transaction_id="t-free", status=OrderStatus.IN_PROGRESS)
    Order.objects.create(transaction_id="t-done", status=OrderStatus.REQUEST_COMPLETED, claimed_until=past)
    note = Notification.objects.create(
        dedupe_key="k-left", resource_type="x", resource_id="1", event_type="created", body="{}",
        state=NotificationState.PROCESSING, claimed_until=past,
    )  # fmt: skip

    assert leases_expired_hand_back() == 2
    assert tasks_sent == [("fulfillment.order_run", {"order_id": left.pk})]
    left.refresh_from_db()
    note.refresh_from_db()
    assert left.claimed_until is None
    assert (note.state, note.claimed_until) == (NotificationState.RECEIVED, None)  # for the relay's next round
    assert leases_expired_hand_back() == 0  # each row handed back once, however many workers look


@pytest.mark.django_db
def test_a_lease_renewed_meanwhile_is_not_freed():
    from partner.core.leases import leases_expired_free

    past = timezone.now() - timedelta(seconds=1)
    order = Order.objects.create(transaction_id="t-renewed", claimed_until=past)
    rows = Order.objects.filter(pk=order.pk)
    # Read as expired, then renewed by its (slow, alive) worker before the UPDATE: the UPDATE
    # matches only the value read, so the live worker keeps it.
    original = rows.filter

    def renewed_between(*args, **kwargs):
        if "claimed_until" in kwargs:
            Order.objects.filter(pk=order.pk).update(claimed_until=timezone.now() + timedelta(seconds=30))
        return original(*args, **kwargs)

    rows.filter = renewed_between
    assert leases_expired_free(rows) == []
    order.refresh_from_db()
    assert order.claimed_until > timezone.now()


def _cut_off_from_the_database(call) -> dict:
    """`call()` in a worker thread whose own connection goes to a PostgreSQL nobody listens for:
    {"answered": what it returned} or {"raised": the exception}."""
    from django.db import connections

    from tests.helpers.ports import free_port

    outcome = {}

    def worker_cut_off():
        away = connections["default"]
        away.settings_dict = {**away.settings_dict, "PORT": free_port()}
        try:
            outcome["answered"] = call()
        except Exception as exc:  # noqa: BLE001 - the test reports it
            outcome["raised"] = exc
        finally:
            away.close()

    thread = threading.Thread(target=worker_cut_off)
    thread.start()
    thread.join(timeout=30)
    return outcome


@pytest.mark.django_db
def test_a_lease_not_given_back_while_the_database_is_away_runs_out_instead():
    """`lease_give_back` in a worker that cannot reach the database: nothing written, nothing raised
    (the lease runs out and the row is handed back as a dead worker's); any other error still raises."""
    from partner.core.leases import lease_give_back

    order = Order.objects.create(transaction_id="t-database-away")
    lease = lease_take(Order.objects.filter(pk=order.pk))

    assert _cut_off_from_the_database(lambda: lease_give_back(lease, last_error="done")) == {"answered": False}
    order.refresh_from_db()
    assert order.claimed_until == lease.until and order.last_error == ""  # still held: it will run out

    bug = lease_take(Order.objects.filter(pk=Order.objects.create(transaction_id="t-bug").pk))
    with pytest.raises(Exception, match="no_such_field"):
        lease_give_back(bug, no_such_field=1)


@pytest.mark.django_db
@pytest.mark.parametrize("renewal", ["renew", "confirm_taken"])
def test_a_renewal_the_database_could_not_answer_leaves_the_lease_lost(renewal):
    """A renewal (`renew`, or the fence of a lease taken, `confirm_taken`) cut off from the database
    raises, and the lease is lost: the worker cannot prove it any longer, so its next fence refuses
    even once the database is back."""
    from django.db.models import F

    order = Order.objects.create(transaction_id=f"t-renewal-away-{renewal}")
    lease = lease_take(Order.objects.filter(pk=order.pk))
    updates = {"attempts": F("attempts") + 1} if renewal == "confirm_taken" else {}

    outcome = _cut_off_from_the_database(lambda: getattr(lease, renewal)(**updates))

    assert "raised" in outcome and lease.lost
    with pytest.raises(LeaseLost):
        lease.confirm()
    assert Order.objects.get(pk=order.pk).claimed_until == lease.until  # nothing written: it runs out


@pytest.mark.django_db
def test_a_lease_is_held_on_the_worker_s_own_clock_until_it_may_have_run_out(settings):
    """`Lease.held`, the fence right before a call's first byte: a worker paused past its lease with
    no renewal (its renewal thread pauses with it) is stopped; a renewal proves it again."""
    import time

    settings.LEASE_SECONDS = 0.5
    lease = lease_take(Order.objects.filter(pk=Order.objects.create(transaction_id="t-clock").pk))
    lease.held()  # just taken
    time.sleep(0.5)  # paused as long as the lease, renewing nothing
    with pytest.raises(LeaseLost, match="ran out on this worker's clock"):
        lease.held()
    assert lease.renew() is True  # nobody took it meanwhile: proved again in the database
    lease.held()


@pytest.mark.django_db(transaction=True)
def test_a_process_renews_every_lease_it_holds_in_one_thread_and_none_after_its_block(settings):
    """Each lease of a block is renewed every third of LEASE_SECONDS by the process's one renewing
    thread, however many blocks run at once (a thread's start and join per block cost each task
    20-40 ms in a worker of 64 threads wanting the GIL); a lease whose block ended is not renewed."""
    settings.LEASE_SECONDS = 0.6  # renewed every 0.2 s
    orders = [Order.objects.create(transaction_id=f"t-kept-{number}") for number in range(3)]
    rows = [Order.objects.filter(pk=order.pk) for order in orders]
    leases = [lease_take(found) for found in rows]
    with lease_kept(leases[0]), lease_kept(leases[1]):
        with lease_kept(leases[2]):
            pass  # a block that ends at once
        ended = rows[2].get().claimed_until
        held = list(zip(rows[:2], [lease.until for lease in leases[:2]], strict=True))
        renewed = lambda: all(found.get().claimed_until > first + timedelta(seconds=0.3) for found, first in held)  # noqa: E731
        assert wait_for(renewed, timeout=10, message="both leases renewed twice")
        assert [thread.name for thread in threading.enumerate()].count("lease-renewal") == 1
        assert not any(lease.lost for lease in leases[:2])
    assert rows[2].get().claimed_until == ended  # never renewed after its block


@pytest.mark.django_db(transaction=True)
def test_a_block_that_ends_while_its_lease_is_renewed_waits_for_that_renewal(settings, monkeypatch):
    """Nothing is renewed once its block has ended: a block ending during its lease's renewal waits
    for it, so the caller's release (or its letting the lease run out) comes after the last renewal."""
    from partner.core.leases import Lease
    from tests.helpers.interleaving import Actor

    settings.LEASE_SECONDS = 0.3
    renewing, go = threading.Event(), threading.Event()
    renew = Lease.renew

    def renewal_held(lease, **updates):
        if threading.current_thread().name == "lease-renewal":
            renewing.set()
            go.wait(10)
        return renew(lease, **updates)

    monkeypatch.setattr(Lease, "renew", renewal_held)
    order = Order.objects.create(transaction_id="t-kept-late")
    lease = lease_take(Order.objects.filter(pk=order.pk))

    def work():
        with lease_kept(lease):
            assert renewing.wait(10), "the renewal never ran"

    worker = Actor(work, name="worker")
    assert renewing.wait(10)
    worker.join(0.5)
    assert worker.is_alive()  # its block ended; it waits for the renewal under way
    go.set()
    worker.outcome()


@pytest.mark.django_db
def test_a_lease_confirmed_as_taken_writes_only_while_it_is_this_worker_s():
    """`confirm_taken`: the fence, the lease renewed and the caller's writes in one UPDATE, answering
    the row as it left it; a lease another worker took, or a row nobody took (its taking rolled
    back), is not this worker's: nothing is written and the answer is None."""
    from django.db.models import F

    from partner.core.leases import Lease, lease_until

    order = Order.objects.create(transaction_id="t-confirm-taken", attempts=3)
    rows = Order.objects.filter(pk=order.pk)
    mine = lease_take(rows)
    row = mine.confirm_taken(attempts=F("attempts") + 1)
    assert (row.pk, row.attempts, row.claimed_until) == (order.pk, 4, mine.until) and not mine.lost
    assert rows.get().claimed_until == mine.until

    rows.update(claimed_until=timezone.now() - timedelta(seconds=1))  # ran out; another worker takes it
    theirs = lease_take(rows)
    assert mine.confirm_taken(attempts=F("attempts") + 1) is None and mine.lost
    assert (rows.get().attempts, rows.get().claimed_until) == (4, theirs.until)

    theirs.release()
    never_taken = Lease(Order, order.pk, lease_until())  # a taking that rolled back: the row is free
    assert never_taken.confirm_taken(attempts=F("attempts") + 1) is None and never_taken.lost
    assert (rows.get().attempts, rows.get().claimed_until) == (4, None)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a taking not yet committed: SQLite has one writer")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("taking", ["commits", "rolls back"])
def test_a_lease_confirmed_as_taken_waits_for_the_taking_s_commit(taking):
    """A relay publishes before it commits: the fence of a task that starts meanwhile waits on the
    row's lock for the taking's end, then confirms the lease it committed, or finds the row free (the
    taking rolled back) and writes nothing. An UPDATE that matched only the lease would find the row
    as it was before the taking and miss it without waiting."""
    from django.db import transaction
    from django.db.models import F

    from partner.core.leases import Lease, lease_until
    from tests.helpers.interleaving import Actor, until_waiting_on_a_lock

    order = Order.objects.create(transaction_id=f"t-taking-{taking}", attempts=3)
    rows = Order.objects.filter(pk=order.pk)
    until, taken, end = lease_until(), threading.Event(), threading.Event()

    def take():
        with transaction.atomic():
            rows.update(claimed_until=until)
            taken.set()
            assert end.wait(60)
            if taking == "rolls back":
                transaction.set_rollback(True)

    relay = Actor(take, name="relay")
    assert taken.wait(60)  # the row taken, not committed
    lease = Lease(Order, order.pk, until)
    worker = Actor(lambda: lease.confirm_taken(attempts=F("attempts") + 1), name="worker")
    until_waiting_on_a_lock()
    end.set()
    relay.outcome()
    row = worker.outcome()
    if taking == "commits":
        assert row.attempts == 4 and row.claimed_until == lease.until > until and not lease.lost
    else:
        assert row is None and lease.lost
        assert (rows.get().attempts, rows.get().claimed_until) == (3, None)
