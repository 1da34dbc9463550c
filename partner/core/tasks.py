"""Core tasks: the diagnostic ping (`manage.py check_worker`) and the daily retention purge."""

import socket

from celery import shared_task
from django.utils import timezone

from partner.core.retention import purge_run

PURGE_TASK = "core.purge"


@shared_task(name="core.worker_ping", ignore_result=False)
def worker_ping(token: str) -> dict:
    return {"token": token, "worker": socket.gethostname(), "at": timezone.now().isoformat()}


# Longer limits than the default task's: a first purge of a large table takes minutes. Cut short, it
# keeps the batches it committed and the next run goes on; run twice at once, each row is done once.
@shared_task(name=PURGE_TASK, soft_time_limit=30 * 60, time_limit=31 * 60)
def purge() -> list[dict]:
    """The retention purge (beat, once a day: CELERY_BEAT_SCHEDULE); what it did, kind by kind."""
    return [outcome.as_dict() for outcome in purge_run()]
