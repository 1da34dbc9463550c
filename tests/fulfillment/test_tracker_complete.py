"""The processed callback may land before the worker that sent the PATCH has recorded it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partner.fulfillment.models import Tracker, TrackerStatus
from partner.fulfillment.services import tracker_complete

pytestmark = pytest.mark.django_db


def test_callback_before_the_delivery_is_recorded_marks_it_delivered():
    Tracker.objects.create(transaction_id="t-race", status=TrackerStatus.IN_PROGRESS, resource_id="r-1")

    tracker = tracker_complete(transaction_id="t-race", event_id="e-1")

    assert tracker.status == TrackerStatus.REQUEST_COMPLETED
    assert tracker.delivered_at is not None and tracker.completed_at is not None
    assert tracker.resource_id == "r-1"


def test_callback_keeps_the_recorded_delivery_time():
    delivered = timezone.now() - timedelta(seconds=5)
    Tracker.objects.create(transaction_id="t-in-order", status=TrackerStatus.RESPONSE_DELIVERED, delivered_at=delivered)

    tracker = tracker_complete(transaction_id="t-in-order", event_id="e-2")

    assert tracker.delivered_at == delivered
    assert tracker.completed_at > delivered


def test_retries_exhausted_fail_an_active_tracker_with_the_last_error():
    from partner.fulfillment.models import FailureCode
    from partner.fulfillment.services import tracker_give_up

    tracker = Tracker.objects.create(transaction_id="t-given-up", status=TrackerStatus.IN_PROGRESS)
    tracker_give_up(tracker_id=tracker.pk, error="ServiceUnavailableError: slot request: service unavailable")
    tracker.refresh_from_db()
    assert tracker.status == TrackerStatus.FAILED
    assert tracker.failure_code == FailureCode.RETRIES_EXHAUSTED
    assert "slot request: service unavailable" in tracker.failure_reason


def test_giving_up_never_undoes_a_completed_order():
    from partner.fulfillment.services import tracker_give_up

    tracker = Tracker.objects.create(transaction_id="t-done", status=TrackerStatus.REQUEST_COMPLETED)
    tracker_give_up(tracker_id=tracker.pk, error="late failure")
    tracker.refresh_from_db()
    assert tracker.status == TrackerStatus.REQUEST_COMPLETED


def test_a_replayed_callback_changes_nothing():
    Tracker.objects.create(transaction_id="t-twice", status=TrackerStatus.RESPONSE_DELIVERED)
    first = tracker_complete(transaction_id="t-twice", event_id="e-1")

    again = tracker_complete(transaction_id="t-twice", event_id="e-1")

    assert again.completed_at == first.completed_at
    assert again.event_id == "e-1"
    assert list(again.steps.filter(name="completed").values_list("detail", flat=True)) == ["event e-1"]
