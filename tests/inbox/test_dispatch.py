"""Dispatch of stored notifications to the fulfillment, against a fake of the service's client.

One table says what is done with a notification; a worker takes it with a lease; a transient
error leaves it for the task's retry. Each rule on its own, without HTTP or a worker.
"""

import json
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from partner.fulfillment.enqueue import ORDER_RUN_TASK
from partner.fulfillment.models import FailureCode, Order, OrderStatus, OrderStep
from partner.inbox.dispatch import notification_process
from partner.inbox.intake import webhook_receive
from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notification_replay
from partner.platform.errors import ServiceUnavailableError
from partner.platform.signatures import signature_compute
from partner.platform.urns import event_resource_type, response_processed_event_type, transaction_resource_type
from tests.helpers.orders import order_delivered
from tests.helpers.ports import free_port
from tests.helpers.products import LENDER_CREDENTIALS, product_create
from tests.helpers.urn_words import OTHER_WORDS

pytestmark = pytest.mark.django_db

TXN = "txn-dispatch-1"
LOAN = {
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"}
}
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


def test_a_new_transaction_is_opened_and_worked_in_its_notifications_own_task(fake_platform, tasks_sent):
    product_create()
    fake_platform.transaction_add(
        TXN,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    notification = transaction_created()

    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    order = Order.objects.get(transaction_id=TXN)
    assert order.status == OrderStatus.RESPONSE_DELIVERED
    assert order.resource_ref == notification.resource_ref
    assert order.attempts == 1 and order.claimed_until is None
    assert fake_platform.names() == ["get_transaction", "request_upload_slots", "upload_resource", "patch_response"]
    assert tasks_sent == []  # no task of its own
    assert list(order.steps.values_list("name", flat=True)) == [
        "opened",
        "prepared",
        "slots_requested",
        "uploaded",
        "delivered",
    ]


def test_a_known_transactions_notification_hands_its_order_to_a_worker_after_commit(
    fake_platform, tasks_sent, django_capture_on_commit_callbacks
):
    order = Order.objects.create(transaction_id=TXN, product_name="address-verification")
    notification = transaction_created()

    with django_capture_on_commit_callbacks() as callbacks:
        assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED
    assert tasks_sent == []  # not before the transaction commits

    for callback in callbacks:
        callback()
    assert tasks_sent == [(ORDER_RUN_TASK, {"order_id": order.pk})]
    assert fake_platform.calls == []  # the worker reads the transaction, not the dispatch


def test_a_transient_error_in_the_first_run_goes_to_the_fulfillment_task_and_the_notification_is_done(
    fake_platform, tasks_sent, settings, django_capture_on_commit_callbacks
):
    settings.CELERY_TASK_RETRY_JITTER = False
    product_create()
    fake_platform.transaction_add(
        TXN,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    fake_platform.fail("request_upload_slots", ServiceUnavailableError("slots: unavailable", status=503, retry_after=7))
    notification = transaction_created()

    with django_capture_on_commit_callbacks(execute=True):
        assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    order = Order.objects.get(transaction_id=TXN)
    assert order.status == OrderStatus.IN_PROGRESS and order.prepared_at is not None  # kept for the retry
    assert order.claimed_until is None and order.next_attempt_at is not None
    assert "unavailable" in order.last_error
    [(name, kwargs)] = tasks_sent
    assert (name, kwargs["order_id"]) == (ORDER_RUN_TASK, order.pk)
    assert kwargs["rate_limited_since"] > 0  # the service asked for the wait: the task's patience starts now


def test_our_cache_away_in_the_first_run_makes_the_order_wait_in_its_task(
    fake_platform, tasks_sent, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """The cache away at the first run's PATCH (in the notification's task): the notification is
    done, the order waits (not failed, nothing counted) and goes to its task with the outage's start."""
    from django.core.cache.backends.redis import RedisCache

    from partner.platform import client

    product_create()
    fake_platform.transaction_add(
        TXN,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    away = RedisCache(f"redis://127.0.0.1:{free_port()}/0", {})
    monkeypatch.setattr(client, "patch_response", lambda transaction_id, payload: away.get("svc:token"))
    notification = transaction_created()

    with django_capture_on_commit_callbacks(execute=True):
        assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    order = Order.objects.get(transaction_id=TXN)
    assert order.status == OrderStatus.IN_PROGRESS and order.failure_reason == ""
    assert order.claimed_until is None and order.next_attempt_at is not None
    assert order.last_error.startswith("Waiting for the cache (ours) to come back: ConnectionError")
    [(name, kwargs)] = tasks_sent
    assert (name, kwargs["order_id"]) == (ORDER_RUN_TASK, order.pk)
    assert kwargs["outage_since"] > 0 and "rate_limited_since" not in kwargs


def test_an_unexpected_error_in_the_first_run_fails_the_order_not_the_notification(fake_platform, monkeypatch):
    from partner.fulfillment import runs

    def broken(order, lease):
        raise RuntimeError("a bug")

    monkeypatch.setattr(runs, "order_prepare", broken)
    notification = transaction_created()

    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    order = Order.objects.get(transaction_id=TXN)
    assert order.status == OrderStatus.FAILED and order.failure_code == FailureCode.RETRIES_EXHAUSTED
    assert "RuntimeError: a bug" in order.failure_reason
    assert order.claimed_until is None


@pytest.mark.parametrize(
    "event_type, status",
    [
        (response_processed_event_type(), OrderStatus.REQUEST_COMPLETED),
        ("urn:svc:platform:transaction:response:rejected", OrderStatus.RESPONSE_DELIVERED),
    ],
    ids=["processed", "other-type"],
)
def test_an_event_notification_completes_the_order_only_when_the_response_was_processed(
    fake_platform, event_type, status
):
    order = order_delivered(TXN)
    fake_platform.events[(TXN, EVENT)] = event_type
    notification = event_created()

    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    assert fake_platform.called("get_event") == [(TXN, EVENT)]
    order.refresh_from_db()
    assert order.status == status
    if status == OrderStatus.REQUEST_COMPLETED:
        assert order.event_id == EVENT and order.completed_at
    else:
        assert OrderStep.objects.get(order=order, name="event").detail == f"{event_type} ({EVENT})"


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
    assert not Order.objects.exists()


def test_notifications_ignored_for_wrong_urn_words_are_handled_when_replayed_after_the_words_are_put_right(
    fake_platform, tasks_sent, settings
):
    product_create()
    fake_platform.transaction_add(
        TXN,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    # The platform's own words reach a deployment still configured with the spec's.
    notification = received(
        resource_type="urn:acme:lending:transaction",
        resource_id=TXN,
        resource_ref=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}",
    )
    assert notification.state == NotificationState.IGNORED

    for name, value in OTHER_WORDS.items():  # put right (docs/deployment.md), then replayed from the admin
        setattr(settings, name, value)
    assert notification_replay(notification_id=notification.pk)
    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED
    # Handled now: the order opened and its transaction read (how its run goes is the pipeline's tests').
    assert Order.objects.filter(transaction_id=TXN).exists()
    assert fake_platform.names()[0] == "get_transaction"


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
    assert not Order.objects.exists()


def test_a_notification_whose_lease_ran_out_is_taken(fake_platform, tasks_sent):
    notification = transaction_created()
    Notification.objects.filter(pk=notification.pk).update(
        state=NotificationState.PROCESSING, claimed_until=timezone.now() - timedelta(seconds=1)
    )

    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED

    assert Order.objects.filter(transaction_id=TXN).exists()


def test_a_transient_error_leaves_the_notification_queued_with_the_lease_released(fake_platform):
    order_delivered(TXN)
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
    assert Order.objects.get(transaction_id=TXN).status == OrderStatus.REQUEST_COMPLETED


def test_our_cache_away_leaves_the_notification_queued_not_failed(fake_platform, monkeypatch):
    """The cache away (Redis refusing connections) while a callback is handled: the notification
    waits, queued and released, saying what it waits for; once the cache is back it is processed."""
    from django.core.cache.backends.redis import RedisCache

    from partner.platform import client

    order_delivered(TXN)
    fake_platform.events[(TXN, EVENT)] = response_processed_event_type()
    away = RedisCache(f"redis://127.0.0.1:{free_port()}/0", {})
    get_event = client.get_event

    def token_read_from_a_cache_away(transaction_id, event_id):
        away.get("svc:token")  # the service's client reads its bearer token first (partner.platform.tokens)

    monkeypatch.setattr(client, "get_event", token_read_from_a_cache_away)
    notification = event_created()

    with pytest.raises(redis.exceptions.ConnectionError):
        notification_process(notification_id=notification.pk)

    notification.refresh_from_db()
    assert (notification.state, notification.claimed_until) == (NotificationState.QUEUED, None)
    assert notification.last_error.startswith("Waiting for the cache (ours) to come back: ConnectionError: Error 111")
    monkeypatch.setattr(client, "get_event", get_event)  # the cache is back
    assert notification_process(notification_id=notification.pk) == NotificationState.PROCESSED
    assert Order.objects.get(transaction_id=TXN).status == OrderStatus.REQUEST_COMPLETED


def test_a_permanent_error_fails_the_notification(fake_platform):
    notification = event_created()  # the service knows no such event: 404

    assert notification_process(notification_id=notification.pk) == NotificationState.FAILED

    notification.refresh_from_db()
    assert notification.state == NotificationState.FAILED and notification.claimed_until is None
    assert "not found" in notification.last_error
    assert fake_platform.called("get_event") == [(TXN, EVENT)]
