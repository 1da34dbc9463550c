"""Deterministic interleavings: one actor held at a named point while another acts.

The code marks the moments where another actor may slip in (`partner.core.checkpoints`). A test
runs one actor in a thread of its own (`Actor`, with its own database connection), holds it at a
checkpoint (`Pause`), makes the other actor act, then lets the first go on. Where the second actor
must be waiting on the first's lock before the first goes on, `lock_waiters` says so from PostgreSQL.
Every wait ends on a condition; its timeout only stops a test that would otherwise hang.
"""

import threading

from django.db import connection, connections

from partner.core.checkpoints import checkpoint_install, checkpoint_remove
from tests.helpers.waiting import wait_for

TIMEOUT = 60.0


class Pause:
    """Hold the first `times` threads that reach checkpoint `name` (those for which `when()` is true,
    when given) until `resume()`. A context manager: leaving it removes the hook and lets any thread
    still held go on."""

    def __init__(self, name: str, *, times: int = 1, when=None):
        self.name, self.times, self.when = name, times, when
        self.held = 0
        self._reached = threading.Semaphore(0)
        self._go = threading.Event()
        self._lock = threading.Lock()

    def __enter__(self) -> "Pause":
        checkpoint_install(self.name, self._hook)
        return self

    def __exit__(self, *exc) -> None:
        checkpoint_remove(self.name)
        self._go.set()

    def _hook(self) -> None:
        if self.when is not None and not self.when():
            return
        with self._lock:
            if self.held >= self.times:
                return
            self.held += 1
        self._reached.release()
        if not self._go.wait(TIMEOUT):
            raise RuntimeError(f"held at {self.name} and never let go")

    def reached(self) -> None:
        """Wait until a thread is held here (fails the test after TIMEOUT)."""
        if not self._reached.acquire(timeout=TIMEOUT):
            raise AssertionError(f"no thread reached checkpoint {self.name}")

    def resume(self) -> None:
        """Let the held threads go on (the hook stays: later arrivals up to `times` are held too)."""
        self._go.set()


class Actor(threading.Thread):
    """`function()` in a thread of its own, with its own database connection (closed at its end);
    `outcome()` waits for it and returns what it returned, or raises what it raised."""

    def __init__(self, function, *, name: str = "actor"):
        super().__init__(name=name, daemon=True)
        self.function = function
        self.result = None
        self.error: BaseException | None = None
        self.start()

    def run(self) -> None:
        try:
            self.result = self.function()
        except BaseException as exc:  # handed to the test by outcome()
            self.error = exc
        finally:
            connections.close_all()

    def outcome(self):
        self.join(TIMEOUT)
        if self.is_alive():
            raise AssertionError(f"{self.name} did not finish")
        if self.error is not None:
            raise self.error
        return self.result


def lock_waiters() -> int:
    """How many sessions of this database wait for a lock another holds (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return cursor.fetchone()[0]


def until_waiting_on_a_lock(count: int = 1) -> None:
    """Wait until `count` sessions of this database wait for a lock (an actor blocked on another's)."""
    wait_for(lambda: lock_waiters() >= count, timeout=TIMEOUT, interval=0.02, message="a session waiting on a lock")
