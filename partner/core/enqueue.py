"""The one way a task is handed to the broker: by its name, after the transaction that needs it commits.

Each app enqueues its own tasks through one function per task, in its `enqueue.py`
(`order_run_enqueue`, ...), and each of those calls `enqueue_after_commit` with the
task's name. Publishing by name keeps the services free of the task modules (which import the
services), so no app has an import cycle. The row the task works on is committed before any
worker can look for it, and a broker that refuses the message costs nothing but time: the row
is safe in the database and the app's periodic sweep sends it again (`partner.core.leases`).

Rows that a request must not wait for the broker to hand over (the inbox's notifications,
`partner.inbox.outbox`; the connector's events, `partner.connector.sending`) go out through a
relay instead: a chore of the workers' housekeeping that stores nothing new, only takes the rows
waiting and publishes one task per row, in the one shape `rows_relay` gives every relay.

A publish never holds its caller (a staff member's request, a task) more than
BROKER_PUBLISH_SECONDS: one attempt, on a connection of its own whose connect, read and write
timeouts are that long, in a thread the caller stops waiting for at that deadline whatever the
transport's own retries do (redis-py retries a connection, kombu reconnects). A broker that is down
or does not answer costs that second; the stored row is enough, the sweep publishes it later.
Each publishing thread keeps its connection for the next publish (opening one cost a staff
delivery more CPU than the rest of its publish, docs/performance.md); a kept connection the broker
dropped meanwhile (a restart, an idle timeout) is replaced by a new one for the same publish.
"""

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from celery import current_app
from django.conf import settings
from django.db import transaction

from partner.core.checkpoints import checkpoint

logger = logging.getLogger(__name__)

# The transport options that bound a socket's connect, read and write, by kombu transport.
_SOCKET_TIMEOUTS = {
    "redis": ("socket_timeout", "socket_connect_timeout"),
    "amqp": ("read_timeout", "write_timeout"),
}
# Publishes run in these threads, so that the caller waits for them at most BROKER_PUBLISH_SECONDS;
# a few threads, each bounded by its socket timeouts, so a broker that hangs holds no more than these.
# One pool per process: a forked child (a Celery pool process, a gunicorn worker) makes its own, since
# it inherits none of its parent's threads.
_publisher: tuple[int, ThreadPoolExecutor] | None = None


def _publisher_pool() -> ThreadPoolExecutor:
    global _publisher
    if _publisher is None or _publisher[0] != os.getpid():
        _publisher = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="publish"))
    return _publisher[1]


# Each publishing thread's connection, kept for its next publish, with what it was made for (the
# app, its write URL, the deadline): a change of any of them makes a new one. Kept only while
# publishes follow each other (a burst of staff deliveries): one idle longer than KEPT_SECONDS is
# replaced, before a broker's idle timeout or missed heartbeats could have closed it unseen.
KEPT_SECONDS = 30.0
_kept = threading.local()


def _connection(app, seconds: float):
    """This thread's connection to the broker, and whether it was kept from an earlier publish."""
    made_for = (id(app), app.conf.broker_write_url or app.conf.broker_url, seconds)
    kept, now = getattr(_kept, "connection", None), time.monotonic()
    if kept is not None and kept[0] == made_for and now - kept[2] < KEPT_SECONDS:
        _kept.connection = (made_for, kept[1], now)
        return kept[1], True
    _connection_drop()
    conn = app.connection_for_write(connect_timeout=seconds)
    options = dict.fromkeys(_SOCKET_TIMEOUTS.get(conn.transport.driver_type, ()), seconds)
    conn.transport_options.update({**options, "max_retries": 0})
    _kept.connection = (made_for, conn, now)
    return conn, False


def _connection_drop() -> None:
    kept = getattr(_kept, "connection", None)
    _kept.connection = None
    if kept is not None:
        with contextlib.suppress(Exception):  # a connection already broken: nothing more to close
            kept[1].release()


# ignore_result: a task published by name does not take its own setting (CELERY_TASK_IGNORE_RESULT), and
# outside a worker Celery would subscribe to each task's result on the result backend (a Redis round trip
# and a subscription per publish, another to drop it) for results nobody reads: our tasks record their
# outcome in the database.
def _publish(app, name: str, kwargs: dict, countdown: float | None, seconds: float) -> None:
    conn, was_kept = _connection(app, seconds)
    try:
        app.send_task(name, kwargs=kwargs, countdown=countdown, connection=conn, retry=False, ignore_result=True)
    except Exception:
        _connection_drop()
        if not was_kept:
            raise
        # The kept connection may have gone stale (a broker restarted, an idle one closed): once more
        # on a new one, within the same deadline.
        conn, _ = _connection(app, seconds)
        try:
            app.send_task(name, kwargs=kwargs, countdown=countdown, connection=conn, retry=False, ignore_result=True)
        except Exception:
            _connection_drop()
            raise


def publisher_prepare() -> None:
    """Load now what a process's first publish would load: the broker's transport, Celery's task sender
    and configuration, and, in the publishing thread, the result backend (its class found through the
    installed packages' entry points; Celery keeps one per thread). Called when a web worker has loaded
    (`config/wsgi.py`): without it the first staff delivery of each gunicorn worker paid all of it in
    its publish (docs/performance.md, "The web side, fourth round"). Nothing is connected: the broker
    may be away at start."""
    app = current_app._get_current_object()
    _publisher_pool().submit(_publisher_load, app).result()


def _publisher_load(app) -> None:
    connection = app.connection_for_write()
    try:
        connection.transport  # noqa: B018 - the transport's class imported and made, not connected
    finally:
        connection.release()
    app.amqp.send_task_message  # noqa: B018 - the task sender and its event dispatcher
    app.backend  # noqa: B018 - this thread's result backend (a publish's result object names it)


def task_send(name: str, /, *, countdown: float | None = None, **kwargs) -> bool:
    """Publish task `name` with keyword arguments now (to run after `countdown` seconds when given);
    False (logged) when the broker refused it or did not take it within BROKER_PUBLISH_SECONDS."""
    seconds = settings.BROKER_PUBLISH_SECONDS
    try:
        # The caller's app: Celery's current app is per thread.
        app = current_app._get_current_object()
        _publisher_pool().submit(_publish, app, name, kwargs, countdown, seconds).result(timeout=seconds)
    except FutureTimeout:
        logger.warning("broker too slow: %s %s left for the sweep (no answer within %s s)", name, kwargs, seconds)
        return False
    except Exception as exc:  # kombu and its transports raise several types; the sweep sends it later
        logger.warning("broker unavailable: %s %s left for the sweep (%s)", name, kwargs, type(exc).__name__)
        return False
    return True


def enqueue_after_commit(name: str, /, *, countdown: float | None = None, **kwargs) -> None:
    """Publish task `name` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: task_send(name, countdown=countdown, **kwargs))


# Relays ------------------------------------------------------------------------------------------


class _NothingSent(Exception):
    """The broker took none of a relay's batch: its transaction rolls back, the rows wait untaken."""


def tasks_publish(name: str, batch: list[dict], *, what: str) -> bool:
    """Publish task `name` once per keyword arguments of `batch`, as one batch where the transport can
    (a Redis pipeline); False (logged) when the broker failed: then none counts as sent (a message
    that went out anyway is sent again later, which the workers' leases make harmless)."""
    try:
        with (
            current_app.producer_or_acquire() as producer,
            producer.batch(max_size=max(1, len(batch))),
        ):
            for kwargs in batch:
                current_app.send_task(name, kwargs=kwargs, producer=producer, ignore_result=True)
    except Exception as exc:  # kombu/redis raise several types; the rows stay for the next round
        logger.warning("broker unavailable: %d %s left waiting (%s)", len(batch), what, type(exc).__name__)
        return False
    return True


def rows_relay(name: str, take: Callable[[], list[dict]], *, what: str) -> int:
    """One round of a relay: hand the rows waiting to the broker, one task `name` each; how many went.

    In one transaction, `take()` marks the rows taken (a state, a lease) and returns the keyword
    arguments of each one's task; the tasks are published as one batch (`tasks_publish`) and the
    transaction commits. When the broker takes none, the transaction rolls back and the rows wait,
    untaken, for the next round. A relay that dies after publishing and before committing leaves
    them untaken too, and they are published again: each task's worker takes its row under a lease
    (`partner.core.leases`), so a second message is harmless. The rows stay locked until the
    commit, and a worker may get its task before it: its first statement must wait for the row's
    lock (an UPDATE that matches the row as it was, as `Lease.confirm_taken` does, or a SELECT ...
    FOR UPDATE), not read the row as it was before the relay took it (PostgreSQL; SQLite has one
    writer).
    """
    try:
        with transaction.atomic():
            batch = take()
            if batch and not tasks_publish(name, batch, what=what):
                raise _NothingSent
            checkpoint("relay.published")
    except _NothingSent:
        return 0
    return len(batch)
