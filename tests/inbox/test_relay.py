"""The outbox relay: stored notifications reach the broker after the request, once, in order."""

import threading
import time

import pytest
from django.db import connection

from partner.core import enqueue
from partner.inbox import outbox
from partner.inbox.models import Notification, NotificationState
from partner.inbox.relay import relay_chore
from tests.helpers.housekeeping import housekeeping_running
from tests.helpers.queues import queue_taken
from tests.helpers.waiting import wait_for

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
    from config.celery import app

    seen = []
    original = app.send_task

    def send_task(name, *args, **kwargs):
        result = original(name, *args, **kwargs)
        assert name == outbox.PROCESS_TASK
        seen.append(kwargs["kwargs"]["notification_id"])
        return result

    monkeypatch.setattr(app, "send_task", send_task)

    app.control.purge()
    yield seen
    app.control.purge()


def on_the_broker() -> list[int]:
    """Take every message off the default queue; the notification ids they carry."""
    from config.celery import app

    return [kwargs["notification_id"] for kwargs in queue_taken(app.conf.task_default_queue, timeout=1)]


def test_relay_hands_received_rows_to_the_broker_once_oldest_first(published):
    waiting = stored(3)
    stored(1, state=NotificationState.PROCESSED, tag="done")
    stored(1, state=NotificationState.IGNORED, tag="ignored")

    assert outbox.notifications_relay() == 3
    assert published == waiting
    assert sorted(on_the_broker()) == waiting  # the batch was flushed (the filesystem broker keeps no order)
    rows = Notification.objects.filter(pk__in=waiting)
    assert {row.state for row in rows} == {NotificationState.QUEUED}
    assert all(row.enqueued_at for row in rows)

    assert outbox.notifications_relay() == 0  # nothing twice
    assert published == waiting


def test_relay_takes_at_most_its_limit(published):
    waiting = stored(5)
    assert outbox.notifications_relay(limit=2) == 2
    assert outbox.notifications_relay(limit=2) == 2
    assert outbox.notifications_relay(limit=2) == 1
    assert published == waiting


def test_broker_down_leaves_every_row_received(broker_down):
    waiting = stored(2)
    assert outbox.notifications_relay() == 0
    assert set(Notification.objects.filter(pk__in=waiting).values_list("state", flat=True)) == {"received"}


def test_broker_failing_midway_leaves_the_whole_batch_received(published, monkeypatch):
    """The batch is one pipeline: when it fails, every row waits for the next round (a message
    that went out anyway is sent again then, and processed once)."""
    from config.celery import app

    waiting = stored(4)
    sending = app.send_task

    def fail_on_the_third(*args, **kwargs):
        if len(published) == 2:
            raise ConnectionError("broker went away")
        return sending(*args, **kwargs)

    monkeypatch.setattr(app, "send_task", fail_on_the_third)
    assert outbox.notifications_relay() == 0
    assert set(Notification.objects.filter(pk__in=waiting).values_list("state", flat=True)) == {"received"}

    monkeypatch.setattr(app, "send_task", sending)
    assert outbox.notifications_relay() == 4


def test_a_row_a_worker_already_claimed_is_not_set_back_to_queued(published, monkeypatch):
    """Published, then claimed by a fast worker before the relay marks it: it stays processing.

    (On PostgreSQL the relay's row lock makes the claim wait; on SQLite only the relay's
    conditional update keeps the state right.)"""
    waiting = stored(1)
    publish = enqueue.tasks_publish

    def publish_then_claimed(name, batch, **options):
        sent = publish(name, batch, **options)
        ids = [kwargs["notification_id"] for kwargs in batch]
        Notification.objects.filter(pk__in=ids).update(state=NotificationState.PROCESSING)
        return sent

    monkeypatch.setattr(enqueue, "tasks_publish", publish_then_claimed)
    outbox.notifications_relay()
    assert Notification.objects.get(pk=waiting[0]).state == NotificationState.PROCESSING


def test_two_relays_at_once_share_the_rows_without_waiting(published, monkeypatch):
    """While one relay holds rows (publishing), another skips them instead of waiting or sending them too."""
    if connection.vendor != "postgresql":
        pytest.skip("SKIP LOCKED needs PostgreSQL")
    waiting = stored(3)
    holding, release = threading.Event(), threading.Event()
    publish = enqueue.tasks_publish

    def slow_publish(name, batch, **options):
        holding.set()
        release.wait(10)
        return publish(name, batch, **options)

    monkeypatch.setattr(enqueue, "tasks_publish", slow_publish)
    first = {}
    thread = threading.Thread(target=lambda: first.setdefault("moved", outbox.notifications_relay()))
    thread.start()
    assert holding.wait(10)
    monkeypatch.setattr(enqueue, "tasks_publish", publish)
    started = time.monotonic()
    assert outbox.notifications_relay() == 0  # every row is locked by the first relay
    assert time.monotonic() - started < 5
    release.set()
    thread.join(10)
    assert first["moved"] == 3
    assert published == waiting


def test_relay_loop_picks_up_rows_stored_while_it_runs(published):
    with housekeeping_running([relay_chore(interval=0.05)]) as thread:
        waiting = stored(2)
        wait_for(lambda: published == waiting, timeout=15, message=lambda: f"relayed {published}")
        assert set(Notification.objects.filter(pk__in=waiting).values_list("state", flat=True)) == {"queued"}
    assert not thread.is_alive()


def test_sweep_enqueues_received_and_stalled_rows_once(published, settings):
    from datetime import timedelta

    from django.utils import timezone

    waiting = stored(1, tag="received")
    stalled = stored(1, state=NotificationState.QUEUED, tag="stalled")
    recent = stored(1, state=NotificationState.QUEUED, tag="recent")
    worker_died = stored(1, state=NotificationState.PROCESSING, tag="died")
    worker_alive = stored(1, state=NotificationState.PROCESSING, tag="alive")
    long_ago = timezone.now() - timedelta(seconds=settings.STALL_SECONDS + 5)
    Notification.objects.filter(pk__in=stalled).update(updated_at=long_ago)
    # The lease of a dead worker ran out; a live worker's has not (however long it has worked).
    Notification.objects.filter(pk__in=worker_died).update(claimed_until=timezone.now() - timedelta(seconds=1))
    Notification.objects.filter(pk__in=worker_alive).update(
        updated_at=long_ago, claimed_until=timezone.now() + timedelta(seconds=60)
    )

    assert outbox.notifications_sweep() == 3
    assert sorted(published) == sorted(waiting + stalled + worker_died)
    assert recent[0] not in published and worker_alive[0] not in published
    assert outbox.notifications_sweep() == 0


def test_replay_puts_the_notification_back_for_the_relay(published):
    done = stored(1, state=NotificationState.FAILED, tag="failed")
    Notification.objects.filter(pk__in=done).update(last_error="boom")

    assert outbox.notification_replay(notification_id=done[0]) is True
    row = Notification.objects.get(pk=done[0])
    assert (row.state, row.last_error) == (NotificationState.RECEIVED, "")
    assert published == []  # the relay hands it over, not the admin's request
    assert outbox.notifications_relay() == 1
    assert published == done
    assert outbox.notification_replay(notification_id=10**9) is False
