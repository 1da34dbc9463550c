"""Leases: one worker holds a row at a time, and a dead worker's row is free when its lease runs out."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partner.core.leases import lease_release, lease_seconds, lease_take
from partner.fulfillment.models import Tracker


@pytest.mark.django_db
def test_a_held_row_cannot_be_taken_until_it_is_released():
    tracker = Tracker.objects.create(transaction_id="t-lease")
    rows = Tracker.objects.filter(pk=tracker.pk)
    assert lease_take(rows, attempts=1) is True
    assert lease_take(rows, attempts=2) is False  # another worker holds it
    tracker.refresh_from_db()
    assert tracker.attempts == 1
    assert tracker.claimed_until > timezone.now() + timedelta(seconds=lease_seconds() - 5)

    lease_release(rows, last_error="done")
    tracker.refresh_from_db()
    assert (tracker.claimed_until, tracker.last_error) == (None, "done")
    assert lease_take(rows) is True


@pytest.mark.django_db
def test_an_expired_lease_is_free(settings):
    tracker = Tracker.objects.create(transaction_id="t-expired", claimed_until=timezone.now() - timedelta(seconds=1))
    assert lease_take(Tracker.objects.filter(pk=tracker.pk)) is True


@pytest.mark.django_db(transaction=True)
def test_a_working_worker_renews_its_short_lease_and_a_dead_one_loses_it(settings):
    import time

    from partner.core.leases import lease_kept

    settings.LEASE_SECONDS = 0.6  # renewed every 0.2 s
    tracker = Tracker.objects.create(transaction_id="t-renewed")
    rows = Tracker.objects.filter(pk=tracker.pk)
    assert lease_take(rows)
    with lease_kept(rows):
        time.sleep(1.5)  # well past one lease: only the renewals keep it
        assert lease_take(rows) is False  # another worker still cannot take it
    # The worker is gone (no more renewals): the lease runs out within LEASE_SECONDS.
    time.sleep(0.8)
    assert lease_take(rows) is True
