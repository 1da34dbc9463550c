"""The outbox relay: stored notifications reach the broker after the request, once, in order."""

import threading
import time

import pytest
from django.db import connection

from partner.inbox import services
from partner.inbox.models import Notification, NotificationState
from partner.inbox.relay import relay_loop
from tests.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def stored(count: int, *, state=NotificationState.RECEIVED, tag="n") -> list[int]:
    return [
        Notification.objects.create(
            dedupe_key=f"id:{tag}-{number}",
            resource_type="urn:svc:platform:transaction",
            resource_id=f"{tag}-{number}",
            event_type="created",
            body="{}",
            state=state,
        ).pk
        for number in range(count)
    ]


@pytest.fixture
def published(monkeypatch):
    """The notification ids handed to the broker, in order (the publish itself still runs)."""
    from partner.inbox.tasks import process_notification

    seen = []
    original = process_notification.apply_async

    def apply_async(*args, **kwargs):
        result = original(*args, **kwargs)
        seen.append(kwargs["kwargs"]["notification_id"])
        return result

    monkeypatch.setattr(process_notification, "apply_async", apply_async)
    from config.celery import app

    app.control.purge()
    yield seen
    app.control.purge()


def on_the_broker() -> list[int]:
    """Take every message off the default queue; the notification ids they carry."""
    from config.celery import app

    ids = []
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue(app.conf.task_default_queue)
        try:
            while True:
                try:
                    message = queue.get(block=True, timeout=1)
                except queue.Empty:
                    break
                ids.append(message.payload[1]["notification_id"])  # protocol 2: (args, kwargs, embed)
                message.ack()
        finally:
            queue.close()
    return ids


def test_relay_hands_received_rows_to_the_broker_once_oldest_first(published):
    waiting = stored(3)
    stored(1, state=NotificationState.PROCESSED, tag="done")
    stored(1, state=NotificationState.IGNORED, tag="ignored")

    assert services.notifications_relay() == 3
    assert published == waiting
    assert sorted(on_the_broker()) == waiting  # the batch was flushed (the filesystem broker keeps no order)
    rows = Notification.objects.filter(pk__in=waiting)
    assert {row.state for row in rows} == {NotificationState.QUEUED}
    assert all(row.enqueued_at for row in rows)

    assert services.notifications_relay() == 0  # nothing twice
    assert published == waiting


def test_relay_takes_at_most_its_limit(published):
    waiting = stored(5)
    assert services.notifications_relay(limit=2) == 2
    assert services.notifications_relay(limit=2) == 2
    assert services.notifications_relay(limit=2) == 1
    assert published == waiting


def test_broker_down_leaves_every_row_received(broker_down):
    waiting = stored(2)
    assert services.notifications_relay() == 0
    assert set(Notification.objects.filter(pk__in=waiting).values_list("state", flat=True)) == {"received"}


def test_broker_failing_midway_leaves_the_whole_batch_received(published, monkeypatch):
    """The batch is one pipeline: when it fails, every row waits for the next round (a message
    that went out anyway is sent again then, and processed once)."""
    from partner.inbox.tasks import process_notification

    waiting = stored(4)
    sending = process_notification.apply_async

    def fail_on_the_third(*args, **kwargs):
        if len(published) == 2:
            raise ConnectionError("broker went away")
        return sending(*args, **kwargs)

    monkeypatch.setattr(process_notification, "apply_async", fail_on_the_third)
    assert services.notifications_relay() == 0
    assert set(Notification.objects.filter(pk__in=waiting).values_list("state", flat=True)) == {"received"}

    monkeypatch.setattr(process_notification, "apply_async", sending)
    assert services.notifications_relay() == 4


def test_a_row_a_worker_already_claimed_is_not_set_back_to_queued(published, monkeypatch):
    """Published, then claimed by a fast worker before the relay marks it: it stays processing.

    (On PostgreSQL the relay's row lock makes the claim wait; on SQLite only the relay's
    conditional update keeps the state right.)"""
    waiting = stored(1)
    publish = services._publish

    def publish_then_claimed(ids):
        sent = publish(ids)
        Notification.objects.filter(pk__in=sent).update(state=NotificationState.PROCESSING)
        return sent

    monkeypatch.setattr(services, "_publish", publish_then_claimed)
    services.notifications_relay()
    assert Notification.objects.get(pk=waiting[0]).state == NotificationState.PROCESSING


def test_two_relays_at_once_share_the_rows_without_waiting(published, monkeypatch):
    """While one relay holds rows (publishing), another skips them instead of waiting or sending them too."""
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED needs PostgreSQL")
    waiting = stored(3)
    holding, release = threading.Event(), threading.Event()
    publish = services._publish

    def slow_publish(ids):
        holding.set()
        release.wait(10)
        return publish(ids)

    monkeypatch.setattr(services, "_publish", slow_publish)
    first = {}
    thread = threading.Thread(target=lambda: first.setdefault("moved", services.notifications_relay()))
    thread.start()
    assert holding.wait(10)
    monkeypatch.setattr(services, "_publish", publish)
    started = time.monotonic()
    assert services.notifications_relay() == 0  # every row is locked by the first relay
    assert time.monotonic() - started < 5
    release.set()
    thread.join(10)
    assert first["moved"] == 3
    assert published == waiting


def test_relay_loop_picks_up_rows_stored_while_it_runs(published):
    stop = threading.Event()
    thread = threading.Thread(target=relay_loop, args=(stop,), kwargs={"interval": 0.05})
    thread.start()
    try:
        waiting = stored(2)
        wait_for(lambda: published == waiting, timeout=15, message=lambda: f"relayed {published}")
        assert set(Notification.objects.filter(pk__in=waiting).values_list("state", flat=True)) == {"queued"}
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def test_sweep_enqueues_received_and_stalled_rows_once(published, settings):
    from datetime import timedelta

    from django.utils import timezone

    waiting = stored(1, tag="received")
    stalled = stored(1, state=NotificationState.QUEUED, tag="stalled")
    recent = stored(1, state=NotificationState.QUEUED, tag="recent")
    Notification.objects.filter(pk__in=stalled).update(
        updated_at=timezone.now() - timedelta(seconds=settings.INBOX_STALL_SECONDS + 5)
    )

    assert services.notifications_sweep() == 2
    assert sorted(published) == sorted(waiting + stalled)
    assert recent[0] not in published
    assert services.notifications_sweep() == 0


def test_an_ignored_notification_replayed_stays_ignored_and_calls_nothing():
    ignored = Notification.objects.create(
        dedupe_key="id:other",
        resource_type="urn:svc:platform:something-else",
        resource_id="x-1",
        event_type="updated",
        resource_ref="http://127.0.0.1:9/never-called",
        body="{}",
        state=NotificationState.QUEUED,  # as the admin's replay leaves it
    )
    assert services.notification_process(notification_id=ignored.pk) == NotificationState.IGNORED
    ignored.refresh_from_db()
    assert ignored.state == NotificationState.IGNORED
