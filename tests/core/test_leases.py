"""Leases: one worker holds a row at a time, and a dead worker's row is free when its lease runs out."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partner.core.leases import lease_release, lease_seconds, lease_take
from partner.fulfillment.models import Order


@pytest.mark.django_db
def test_a_held_row_cannot_be_taken_until_it_is_released():
    order = Order.objects.create(transaction_id="t-lease")
    rows = Order.objects.filter(pk=order.pk)
    assert lease_take(rows, attempts=1) is True
    assert lease_take(rows, attempts=2) is False  # another worker holds it
    order.refresh_from_db()
    assert order.attempts == 1
    assert order.claimed_until > timezone.now() + timedelta(seconds=lease_seconds() - 5)

    lease_release(rows, last_error="done")
    order.refresh_from_db()
    assert (order.claimed_until, order.last_error) == (None, "done")
    assert lease_take(rows) is True


@pytest.mark.django_db
def test_an_expired_lease_is_free(settings):
    order = Order.objects.create(transaction_id="t-expired", claimed_until=timezone.now() - timedelta(seconds=1))
    assert lease_take(Order.objects.filter(pk=order.pk)) is True


@pytest.mark.django_db(transaction=True)
def test_a_working_worker_renews_its_short_lease_and_a_dead_one_loses_it(settings):
    import time

    from partner.core.leases import lease_kept

    settings.LEASE_SECONDS = 0.6  # renewed every 0.2 s
    order = Order.objects.create(transaction_id="t-renewed")
    rows = Order.objects.filter(pk=order.pk)
    assert lease_take(rows)
    with lease_kept(rows):
        time.sleep(1.5)  # well past one lease: only the renewals keep it
        assert lease_take(rows) is False  # another worker still cannot take it
    # The worker is gone (no more renewals): the lease runs out within LEASE_SECONDS.
    time.sleep(0.8)
    assert lease_take(rows) is True


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
    assert tasks_sent == [("fulfillment.fulfill", {"order_id": left.pk})]
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
