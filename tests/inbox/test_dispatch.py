"""Dispatch of stored notifications to the fulfillment, against a fake of the service's client.

One table says what is done with a notification; a worker takes it with a lease; a transient
error leaves it for the task's retry. Each rule on its own, without HTTP or a worker.
"""

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from partner.fulfillment.enqueue import FULFILL_TASK
from partner.fulfillment.models import Tracker, TrackerStatus, TrackerStep
from partner.inbox.dispatch import notification_process
from partner.inbox.intake import webhook_receive
from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notification_replay
from partner.platform.errors import ServiceUnavailableError
from partner.platform.signatures import signature_compute
from partner.platform.urns import event_resource_type, response_processed_event_type, transaction_resource_type

pytestmark = pytest.mark.django_db

TXN = "txn-dispatch-1"
EVENT = "evt-dispatch-1"


def received(*, resource_type: str, resource_id: str, resource_ref: str, event_type: str = "created") -> Notification:
    """A notification as the intake stores a signed webhook."""
    body = json.dumps(
        {
            "eventTime": "2026-11-22T10:00:00Z",
            "eventType": event_type,
            "meta": {
                "resourceType": resource_type,
                "resourceId": resource_id,
                "instanceId": "address-verification",
                "resourceRef": resource_ref,
            },
        }
    ).encode()
    notification_id = webhook_receive(
        body=body,
        signature=signature_compute(body, settings.SVC_SIGNING_SECRETS[0]),
        headers={},
        remote_addr="127.0.0.1",
    )
    return Notification.objects.get(pk=notification_id)


def transaction_created() -> Notification:
    return received(
        resource_type=transaction_resource_type(),
        resource_id=TXN,
        resource_ref=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}",
    )


def event_created() -> Notification:
    return received(
        resource_type=event_resource_type(),
        resource_id=EVENT,
        resource_ref=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}/events/{EVENT}",
    )


def test_a_transaction_notification_opens_a_tracker_and_enqueues_it_after_commit(
    fake_platform, tasks_sent, django_capture_on_commit_callbacks
):
    notification = transaction_created()

    with django_capture_on_commit_callbacks() as callbacks:
        assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED
    tracker = Tracker.objects.get(transaction_id=TXN)
    assert tracker.status == TrackerStatus.VALIDATION_REQUESTED
    assert tracker.product_name == "address-verification"
    assert tracker.resource_ref == notification.resource_ref
    assert tasks_sent == []  # not before the tracker is committed

    for callback in callbacks:
        callback()
    assert tasks_sent == [(FULFILL_TASK, {"tracker_id": tracker.pk})]
    assert fake_platform.calls == []  # the worker reads the transaction, not the dispatch


@pytest.mark.parametrize(
    "event_type, status",
    [
        (response_processed_event_type(), TrackerStatus.REQUEST_COMPLETED),
        ("urn:svc:platform:transaction:response:rejected", TrackerStatus.RESPONSE_DELIVERED),
    ],
    ids=["processed", "other-type"],
)
def test_an_event_notification_completes_the_tracker_only_when_the_response_was_processed(
    fake_platform, event_type, status
):
    tracker = Tracker.objects.create(transaction_id=TXN, status=TrackerStatus.RESPONSE_DELIVERED)
    fake_platform.events[(TXN, EVENT)] = event_type
    notification = event_created()

    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    assert fake_platform.called("get_event") == [(TXN, EVENT)]
    tracker.refresh_from_db()
    assert tracker.status == status
    if status == TrackerStatus.REQUEST_COMPLETED:
        assert tracker.event_id == EVENT and tracker.completed_at
    else:
        assert TrackerStep.objects.get(tracker=tracker, name="event").detail == f"{event_type} ({EVENT})"


@pytest.mark.parametrize(
    "resource_type, event_type",
    [("urn:svc:platform:something-else", "created"), ("urn:svc:platform:transaction", "updated")],
    ids=["other-resource", "other-event"],
)
def test_an_unknown_pair_is_stored_ignored_and_finished_ignored_when_replayed(
    fake_platform, tasks_sent, resource_type, event_type
):
    notification = received(
        resource_type=resource_type,
        resource_id=TXN,
        resource_ref=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}",
        event_type=event_type,
    )
    assert notification.state == NotificationState.IGNORED

    assert notification_replay(notification_id=notification.pk)
    assert notification_process(notification_id=notification.pk) == NotificationState.IGNORED

    notification.refresh_from_db()
    assert notification.state == NotificationState.IGNORED
    assert notification.processed_at and notification.claimed_until is None
    assert fake_platform.calls == [] and tasks_sent == []
    assert not Tracker.objects.exists()


def test_a_notification_another_worker_holds_is_not_processed(fake_platform, tasks_sent):
    notification = transaction_created()
    held_until = timezone.now() + timedelta(seconds=60)
    Notification.objects.filter(pk=notification.pk).update(state=NotificationState.PROCESSING, claimed_until=held_until)

    assert notification_process(notification_id=notification.pk) is None

    notification.refresh_from_db()
    assert (notification.state, notification.claimed_until, notification.attempts) == (
        NotificationState.PROCESSING,
        held_until,
        0,
    )
    assert not Tracker.objects.exists()


def test_a_notification_whose_lease_ran_out_is_taken(fake_platform, tasks_sent):
    notification = transaction_created()
    Notification.objects.filter(pk=notification.pk).update(
        state=NotificationState.PROCESSING, claimed_until=timezone.now() - timedelta(seconds=1)
    )

    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    assert Tracker.objects.filter(transaction_id=TXN).exists()


def test_a_transient_error_leaves_the_notification_queued_with_the_lease_released(fake_platform):
    Tracker.objects.create(transaction_id=TXN, status=TrackerStatus.RESPONSE_DELIVERED)
    fake_platform.events[(TXN, EVENT)] = response_processed_event_type()
    fake_platform.fail("get_event", ServiceUnavailableError("event retrieval: service unavailable", status=503))
    notification = event_created()

    with pytest.raises(ServiceUnavailableError):
        notification_process(notification_id=notification.pk)

    notification.refresh_from_db()
    assert notification.state == NotificationState.QUEUED
    assert notification.claimed_until is None
    assert "service unavailable" in notification.last_error
    # Released, so the task's retry takes it at once.
    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED
    assert Tracker.objects.get(transaction_id=TXN).status == TrackerStatus.REQUEST_COMPLETED


def test_a_permanent_error_fails_the_notification(fake_platform):
    notification = event_created()  # the service knows no such event: 404

    assert notification_process(notification_id=notification.pk) == NotificationState.FAILED

    notification.refresh_from_db()
    assert notification.state == NotificationState.FAILED and notification.claimed_until is None
    assert "not found" in notification.last_error
    assert fake_platform.called("get_event") == [(TXN, EVENT)]
