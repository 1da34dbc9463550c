"""Celery tasks of the inbox: process one notification; sweep the ones left behind.

They are published by name by the outbox (`outbox.py`), never imported by the services.
"""

from celery import shared_task
from django.conf import settings

from partner.core.retries import outage_of, task_retry
from partner.inbox.dispatch import notification_process
from partner.inbox.outbox import PROCESS_TASK, SWEEP_TASK, notifications_sweep
from partner.platform.errors import ServiceError


@shared_task(bind=True, name=PROCESS_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def process_notification(
    self, notification_id: int, rate_limited_since: float | None = None, outage_since: float | None = None
):
    # `rate_limited_since` and `outage_since` are the retry rule's, carried from run to run (partner.core.retries).
    try:
        return notification_process(notification_id=notification_id)
    except ServiceError as exc:  # transient: the service asked us to come back later
        raise task_retry(self, exc)
    except Exception as exc:
        if outage_of(exc) is None:
            raise
        raise task_retry(self, exc) from exc  # one of our own services away: waited for, uncounted


@shared_task(name=SWEEP_TASK)
def sweep():
    return notifications_sweep()
