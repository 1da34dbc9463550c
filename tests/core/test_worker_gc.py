"""A worker freezes what it loaded at start, so the collector's full passes walk only what tasks made."""

import gc

import pytest
from celery.signals import worker_process_init, worker_ready

from partner.core.heap import WORKER_YOUNG_THRESHOLD

PYTHON_THRESHOLDS = (700, 10, 10)  # Python's own


@pytest.fixture(autouse=True)
def thresholds():
    """Each test starts from Python's thresholds; this process's are given back after it."""
    kept = gc.get_threshold()
    gc.set_threshold(*PYTHON_THRESHOLDS)
    yield
    gc.set_threshold(*kept)


@pytest.mark.parametrize("started", [worker_ready, worker_process_init], ids=["worker ready", "prefork child"])
def test_a_started_worker_moves_what_it_loaded_to_the_permanent_generation(started):
    gc.unfreeze()  # whatever a worker started by an earlier test of this process froze
    try:
        started.send(sender=None)
        assert gc.get_freeze_count() > 10_000  # Django, Celery and the project's modules
        assert len(gc.get_objects()) < gc.get_freeze_count()  # what the collector still walks
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("started", [worker_ready, worker_process_init], ids=["worker ready", "prefork child"])
def test_a_started_worker_collects_its_young_objects_less_often(started):
    """The young generation's threshold raised from Python's 700; the older generations' kept."""
    try:
        started.send(sender=None)
        assert gc.get_threshold() == (WORKER_YOUNG_THRESHOLD, *PYTHON_THRESHOLDS[1:])
        assert PYTHON_THRESHOLDS[0] < WORKER_YOUNG_THRESHOLD
    finally:
        gc.unfreeze()
