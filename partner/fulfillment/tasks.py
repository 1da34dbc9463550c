"""Celery tasks of the fulfilment: thin wrappers that load by id and call a service."""

import logging

from celery import Task, shared_task
from django.conf import settings

from partner.core.retries import retry_countdown
from partner.fulfillment import reconciliation, services
from partner.platform.errors import ServiceError

logger = logging.getLogger(__name__)


class FulfilTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # Final failure (retries exhausted or an unexpected error): the tracker says so.
        tracker_id = kwargs.get("tracker_id", args[0] if args else None)
        if tracker_id is not None:
            services.tracker_give_up(tracker_id=tracker_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, base=FulfilTask, name="fulfillment.fulfil", max_retries=settings.CELERY_TASK_MAX_RETRIES)
def fulfil(self, tracker_id: int):
    try:
        services.tracker_fulfil(tracker_id=tracker_id)
    except ServiceError as exc:  # only transient ones reach here: the service said "later"
        countdown = retry_countdown(self.request.retries, retry_after=getattr(exc, "retry_after", None))
        services.tracker_retry_scheduled(tracker_id=tracker_id, countdown=countdown, error=str(exc))
        raise self.retry(exc=exc, countdown=countdown)


def fulfil_enqueue(tracker_id: int) -> bool:
    """Hand the tracker to a worker; False when the broker is down (the sweeper will try again)."""
    try:
        fulfil.apply_async(kwargs={"tracker_id": tracker_id})
    except Exception:  # kombu raises OperationalError and friends; the row is safe in the database
        logger.warning("broker unavailable: tracker %s left for the sweeper", tracker_id)
        return False
    return True


@shared_task(name="fulfillment.reconcile")
def reconcile():
    return reconciliation.transactions_reconcile(enqueue=fulfil_enqueue)


@shared_task(name="fulfillment.sweep")
def sweep():
    return reconciliation.trackers_sweep(enqueue=fulfil_enqueue)
