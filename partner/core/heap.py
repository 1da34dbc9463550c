"""The heap a long-lived process loaded at start, kept out of the collector's full passes.

A web worker or a Celery worker loads about 150,000-250,000 objects before its first request or task
(Python's and Django's modules, our apps, Celery's machinery), and they live until the process exits.
Python's collector walks all of them on each full (oldest generation) collection, which a burst
triggers every few dozen staff deliveries: 100-550 ms of the process's one GIL each time (a worker:
docs/performance.md, "The worker, second round"; a web worker drawing the staff's pages alike). Once
the process is ready, `loaded_freeze` moves them to the permanent generation (`gc.freeze`, Python's
own mechanism for exactly this), so a full collection walks only what requests and tasks made since.
What is frozen is never collected: the process's code and configuration, which nothing frees anyway.
"""

import gc


def loaded_freeze() -> None:
    """Collect what the start left behind, then move every object that is left to the permanent
    generation. Called once the process is ready to serve: at the end of the WSGI module
    (`config/wsgi.py`, which each gunicorn worker imports, or the master with --preload, before it
    forks), and at Celery's `worker_ready` and `worker_process_init` (config/celery.py)."""
    gc.collect()
    gc.freeze()
