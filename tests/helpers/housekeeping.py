"""A worker's housekeeping loop (partner/core/housekeeping.py) running in a test, in a thread of its own."""

import threading
from contextlib import contextmanager

from partner.core.housekeeping import housekeeping_loop


@contextmanager
def housekeeping_running(chores):
    """The loop running `chores` (and the lease hand-backs) until the block ends; then stopped and joined."""
    stop = threading.Event()
    thread = threading.Thread(target=housekeeping_loop, args=(stop,), kwargs={"chores": chores}, daemon=True)
    thread.start()
    try:
        yield thread
    finally:
        stop.set()
        thread.join(10)
