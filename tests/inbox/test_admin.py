"""The inbox and the trackers in the admin: lists, filters, the raw body, replay and retry."""

import json

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from partner.fulfillment.models import FailureCode, Tracker, TrackerStatus
from partner.inbox.models import Notification, NotificationState


@pytest.fixture
def staff(client):
    user = User.objects.create_superuser("staff", "staff@partner.example", "staff-password-1")
    client.force_login(user)
    return client


def notification(**kwargs):
    body = json.dumps({"eventType": "created", "meta": {"resourceId": "txn-admin"}, "note": "<script>x</script>"})
    defaults = {
        "dedupe_key": "k1",
        "resource_type": "urn:svc:platform:transaction",
        "resource_id": "txn-admin",
        "event_type": "created",
        "body": body,
        "headers": {"User-Agent": "svc"},
        "state": NotificationState.FAILED,
        "last_error": "boom",
    }
    return Notification.objects.create(**{**defaults, **kwargs})


@pytest.mark.django_db
def test_inbox_list_filter_and_search(staff):
    notification()
    url = reverse("admin:inbox_notification_changelist")
    assert "txn-admin" in staff.get(url, {"state__exact": "failed"}).content.decode()
    assert "txn-admin" not in staff.get(url, {"state__exact": "processed"}).content.decode()
    assert "txn-admin" in staff.get(url, {"q": "txn-admin"}).content.decode()


@pytest.mark.django_db
def test_raw_body_is_shown_escaped(staff):
    stored = notification()
    page = staff.get(reverse("admin:inbox_notification_change", args=[stored.pk])).content.decode()
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>x</script>" not in page


@pytest.mark.django_db(transaction=True)
def test_replay_action_enqueues_again(staff):
    stored = notification()
    response = staff.post(
        reverse("admin:inbox_notification_changelist"),
        {"action": "replay", "_selected_action": [stored.pk]},
        follow=True,
    )
    assert "1 of 1 notification(s) enqueued again" in response.content.decode()
    stored.refresh_from_db()
    assert stored.state == NotificationState.RECEIVED  # the relay hands it to the broker


@pytest.mark.django_db
def test_tracker_list_and_retry_of_a_failed_tracker(staff):
    failed = Tracker.objects.create(
        transaction_id="txn-failed",
        status=TrackerStatus.FAILED,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason="Gave up after retries: 503",
    )
    done = Tracker.objects.create(transaction_id="txn-done", status=TrackerStatus.REQUEST_COMPLETED)
    url = reverse("admin:fulfillment_tracker_changelist")
    page = staff.get(url, {"status__exact": "FAILED"}).content.decode()
    assert "txn-failed" in page and "txn-done" not in page
    assert (
        "Gave up after retries"
        in staff.get(reverse("admin:fulfillment_tracker_change", args=[failed.pk])).content.decode()
    )

    response = staff.post(url, {"action": "retry", "_selected_action": [failed.pk, done.pk]}, follow=True)
    text = response.content.decode()
    assert "1 tracker(s) sent back to work" in text
    assert "1 tracker(s) were not failed" in text
    failed.refresh_from_db()
    done.refresh_from_db()
    assert failed.status == TrackerStatus.VALIDATION_REQUESTED and failed.failure_reason == ""
    assert done.status == TrackerStatus.REQUEST_COMPLETED
