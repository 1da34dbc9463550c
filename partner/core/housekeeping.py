"""The workers' housekeeping: one loop in each worker's main process runs every app's frequent chores.

It runs as a thread of each Celery worker's main process (the `Housekeeping` boot step, added to
the app in `config/celery.py`), or alone in the foreground with `manage.py inbox_relay`. Two kinds
of chores:

- every third of LEASE_SECONDS, the rows a dead worker held are handed back to a worker
  (`partner.core.leases.leases_expired_hand_back`: each app registers its own), so an order whose
  worker was killed is picked up within seconds, whatever the broker does with its message;
- the chores apps register here (`housekeeping_chore_register`), each run every `interval` seconds
  and again at once while it reports more waiting: the inbox's relay, which hands stored webhook
  notifications to the broker. A chore may be woken before its interval runs out by a thread of the
  same process that committed work for it (`housekeeping_chore_wake`).

A failure (database or broker away) is logged once and the loop goes on trying; a deployment needs
no extra process for any of this.
"""

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from celery import bootsteps
from django.db import close_old_connections, connection

from partner.core.leases import lease_seconds, leases_expired_hand_back

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Chore:
    """One round of an app's chore: `run()` is True when more waits (run it again at once)."""

    name: str
    run: Callable[[], bool]
    interval: float


_chores: dict[str, Chore] = {}


def housekeeping_chore_register(chore: Chore) -> None:
    """Run `chore` in every worker's housekeeping loop every `chore.interval` seconds (at once again
    while it returns True). Registered by each app in its ready(): this layer knows no app."""
    _chores[chore.name] = chore


# The chores woken before their interval ran out (`housekeeping_chore_wake`), and the loop's wake-up.
_woken: set[str] = set()
_wake = threading.Event()
# The chores of the loops running in this process, by name (how many loops run each).
_running: Counter[str] = Counter()
# The loop sleeps at most this long at a time, so that it sees its stop event while it waits for a wake.
_SLEEP_SLICE = 0.25


def housekeeping_chore_wake(name: str) -> bool:
    """Have this process's loop run chore `name` now rather than at its next interval: a thread of
    this process just committed work for it (a connector event stored by a worker's task). Costs a
    flag. Whether a loop of this process runs the chore: a process without one (a web worker, a
    prefork worker's child) is not woken, and its chores' rows wait for a loop's interval unless the
    caller runs the chore itself."""
    _woken.add(name)
    _wake.set()
    return _running[name] > 0


# A prefork worker forks pool processes from the main process, where the loop's thread runs. A
# fork waits for the loop's round to end, so no child starts with a half-done round in its copy of
# memory (a transaction, a producer taken from kombu's pool, SQLite's lock state). (A round stuck
# on a hung call does not hold a fork up for more than 10 s.)
_round = threading.Lock()
_held_for_fork = False
_fork_guard_installed = False


def _fork_before() -> None:
    global _held_for_fork
    _held_for_fork = _round.acquire(timeout=10)


def _fork_after_in_parent() -> None:
    if _held_for_fork:
        _round.release()


def _fork_after_in_child() -> None:
    global _round, _held_for_fork
    _round, _held_for_fork = threading.Lock(), False
    _running.clear()  # the parent's loop is not in the child: nothing here runs a chore


def _fork_guard_install() -> None:
    """Only a process that keeps house pays for the guard (web processes import this module too)."""
    global _fork_guard_installed
    if not _fork_guard_installed:
        os.register_at_fork(
            before=_fork_before, after_in_parent=_fork_after_in_parent, after_in_child=_fork_after_in_child
        )
        _fork_guard_installed = True


def housekeeping_loop(stop: threading.Event, *, chores: list[Chore] | None = None) -> None:
    """Run the hand-backs and the registered chores until `stop` is set. Each is tried on its own: one
    that fails (its database or broker away) is logged once, tried again a second later, and keeps
    none of the others from running."""
    _fork_guard_install()
    jobs = [Chore("lease hand-backs", _hand_backs, interval=lease_seconds() / 3)]
    jobs += list(_chores.values()) if chores is None else chores
    due = dict.fromkeys((job.name for job in jobs), 0.0)
    failing: set[str] = set()
    _running.update(due.keys())
    try:
        _rounds(stop, jobs, due, failing)
    finally:
        _running.subtract(due.keys())
        connection.close()


def _rounds(stop: threading.Event, jobs: list[Chore], due: dict[str, float], failing: set[str]) -> None:
    while not stop.is_set():
        for job in jobs:
            now = time.monotonic()
            if now < due[job.name] or stop.is_set():
                continue
            more = _job_round(job, failing)
            due[job.name] = now + (0.0 if more else job.interval if job.name not in failing else 1.0)
        _wake.wait(max(0.0, min(min(due.values()) - time.monotonic(), _SLEEP_SLICE)))
        if _wake.is_set():
            _wake.clear()
            while _woken:
                name = _woken.pop()
                if name in due:
                    due[name] = 0.0


def _hand_backs() -> bool:
    leases_expired_hand_back()
    return False


def _job_round(job: Chore, failing: set[str]) -> bool:
    """One round of `job`, under the fork guard; True when more waits."""
    try:
        with _round:
            close_old_connections()  # as around a request: drop a connection the database closed
            more = job.run()
            if connection.vendor == "sqlite":
                # SQLite's file locks are per process: no open handle goes into a forked child.
                connection.close()
    except Exception as exc:
        if job.name not in failing:
            logger.warning("housekeeping: %s: %s; trying again every second", job.name, type(exc).__name__)
        failing.add(job.name)
        connection.close()
        return False
    if job.name in failing:
        logger.info("housekeeping: %s working again", job.name)
        failing.discard(job.name)
    return bool(more)


class Housekeeping(bootsteps.StartStopStep):
    """Worker boot step: the housekeeping loop in a daemon thread of the worker's main process."""

    label = "housekeeping"

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.stop_event = threading.Event()
        self.thread = None

    def start(self, parent):
        self.stop_event.clear()
        self.thread = threading.Thread(
            target=housekeeping_loop, args=(self.stop_event,), name="housekeeping", daemon=True
        )
        self.thread.start()

    def stop(self, parent):
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
            self.thread = None

    terminate = stop
