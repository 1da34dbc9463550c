"""A worker freezes what it loaded at start, so the collector's full passes walk only what tasks made."""

import gc

import pytest
from celery.signals import worker_process_init, worker_ready


@pytest.mark.parametrize("started", [worker_ready, worker_process_init], ids=["worker ready", "prefork child"])
def test_a_started_worker_moves_what_it_loaded_to_the_permanent_generation(started):
    gc.unfreeze()  # whatever a worker started by an earlier test of this process froze
    try:
        started.send(sender=None)
        assert gc.get_freeze_count() > 10_000  # Django, Celery and the project's modules
        assert len(gc.get_objects()) < gc.get_freeze_count()  # what the collector still walks
    finally:
        gc.unfreeze()
