"""The outbox relay's loop: in every Celery worker, or alone with `manage.py inbox_relay`.

The webhook request only stores the notification; this loop hands stored rows
to the broker (`outbox.notifications_relay`) a moment later. It runs as a
thread of each worker's main process (the `InboxRelay` boot step, added to
the app in `config/celery.py`), so a deployment needs no extra process: relays
in several workers share the rows without waiting on each other. It sleeps
INBOX_RELAY_INTERVAL seconds when there is nothing to hand over, and goes
again at once while there is; 0 turns it off (the periodic sweep still
enqueues what waits, only later).

The loop also does the workers' other frequent chore: every third of LEASE_SECONDS it hands back
the rows a dead worker held (`partner.core.leases.leases_expired_hand_back`), so that an order
whose worker was killed is picked up within seconds on any broker.
"""

import logging
import os
import threading
import time

from celery import bootsteps
from django.conf import settings
from django.db import close_old_connections, connection

from partner.core.leases import lease_seconds, leases_expired_hand_back
from partner.inbox.health import relay_round_record
from partner.inbox.outbox import notifications_relay

logger = logging.getLogger(__name__)

BATCH = 200

# A prefork worker forks pool processes from the main process, where the relay thread runs.
# A fork waits for the relay's round to end, so no child starts with a half-done round in its
# copy of memory (a transaction, a producer taken from kombu's pool, SQLite's lock state).
# (A round stuck on a hung call does not hold a fork up for more than 10 s.)
_round = threading.Lock()
_held_for_fork = False


def _fork_before() -> None:
    global _held_for_fork
    _held_for_fork = _round.acquire(timeout=10)


def _fork_after_in_parent() -> None:
    if _held_for_fork:
        _round.release()


def _fork_after_in_child() -> None:
    global _round, _held_for_fork
    _round, _held_for_fork = threading.Lock(), False


_fork_guard_installed = False


def _fork_guard_install() -> None:
    """Only a process that relays pays for the guard (web processes import this module too)."""
    global _fork_guard_installed
    if not _fork_guard_installed:
        os.register_at_fork(
            before=_fork_before, after_in_parent=_fork_after_in_parent, after_in_child=_fork_after_in_child
        )
        _fork_guard_installed = True


def relay_loop(stop: threading.Event, *, interval: float) -> None:
    """Relay until `stop` is set. A failure (database or broker away) is logged and retried later."""
    _fork_guard_install()
    failing = False
    hand_back_at = 0.0
    while not stop.is_set():
        moved = 0
        try:
            with _round:
                close_old_connections()  # as around a request: drop a connection the database closed
                if time.monotonic() >= hand_back_at:
                    leases_expired_hand_back()
                    relay_round_record()  # for /healthz/ready
                    hand_back_at = time.monotonic() + lease_seconds() / 3
                moved = notifications_relay(limit=BATCH)
                if connection.vendor == "sqlite":
                    # SQLite's file locks are per process: no open handle goes into a forked child.
                    connection.close()
            if failing:
                logger.info("inbox relay: working again")
            failing = False
        except Exception as exc:
            if not failing:
                logger.warning("inbox relay: %s; trying again every %ss", type(exc).__name__, interval)
            failing = True
            connection.close()
        if moved < BATCH:
            stop.wait(interval if not failing else max(interval, 1.0))
    connection.close()


class InboxRelay(bootsteps.StartStopStep):
    """Worker boot step: the relay loop in a daemon thread of the worker's main process."""

    label = "inbox relay"

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.stop_event = threading.Event()
        self.thread = None

    def start(self, parent):
        interval = settings.INBOX_RELAY_INTERVAL
        if interval <= 0:
            return
        self.stop_event.clear()
        self.thread = threading.Thread(
            target=relay_loop, args=(self.stop_event,), kwargs={"interval": interval}, name="inbox-relay", daemon=True
        )
        self.thread.start()

    def stop(self, parent):
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
            self.thread = None

    terminate = stop
