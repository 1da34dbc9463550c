"""The heap a long-lived process loaded at start, kept out of the collector's full passes.

A web worker or a Celery worker loads about 150,000-250,000 objects before its first request or task
(Python's and Django's modules, our apps, Celery's machinery), and they live until the process exits.
Python's collector walks all of them on each full (oldest generation) collection, which a burst
triggers every few dozen staff deliveries: 100-550 ms of the process's one GIL each time (a worker:
docs/performance.md, "The worker, second round"; a web worker drawing the staff's pages alike). Once
the process is ready, `loaded_freeze` moves them to the permanent generation (`gc.freeze`, Python's
own mechanism for exactly this), so a full collection walks only what requests and tasks made since.
What is frozen is never collected: the process's code and configuration, which nothing frees anyway.

A Celery worker also makes its young collections rarer (`young_threshold`): with the loaded heap
frozen, a young collection walks what tasks allocated and still hold, and at Python's 700 they were
1.2-1.7 ms of the worker's CPU per staff delivery; with a wider young generation more of a task's
objects are freed by their reference counts before any collection looks at them (docs/performance.md,
"The worker, third round").
"""

import gc

# Container objects allocated (less those freed) that trigger a young collection in a worker, where
# Python's default is 700. In process, 55-65 % less of the collector's CPU per staff delivery, for a
# young collection of about 2 ms where it took 0.2-0.6, and about 1,200 cyclic objects waiting for
# it where 70 did. The older generations keep Python's thresholds.
WORKER_YOUNG_THRESHOLD = 7_000


def loaded_freeze(*, young_threshold: int | None = None) -> None:
    """Collect what the start left behind, then move every object that is left to the permanent
    generation. Called once the process is ready to serve: at the end of the WSGI module
    (`config/wsgi.py`, which each gunicorn worker imports, or the master with --preload, before it
    forks), and at Celery's `worker_ready` and `worker_process_init` (config/celery.py), which pass
    `young_threshold` (WORKER_YOUNG_THRESHOLD): the young generation's threshold from then on."""
    gc.collect()
    gc.freeze()
    if young_threshold is not None:
        gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
