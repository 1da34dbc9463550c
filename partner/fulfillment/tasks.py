"""Celery tasks of the fulfillment: thin wrappers that call a service.

They are published by name through `enqueue.py` (one function per task), never imported by
the services.
"""

import logging

from celery import Task, shared_task
from django.conf import settings

from partner.core.retries import task_retry, task_retry_plan
from partner.fulfillment import reconciliation, staff, staff_events
from partner.fulfillment.deliveries import deliveries_send, order_held_for
from partner.fulfillment.enqueue import (
    DELIVERIES_TASK,
    FULFILL_TASK,
    OVERDUE_TASK,
    RECONCILE_TASK,
    SWEEP_TASK,
    deliveries_send_enqueue,
    tracker_fulfill_enqueue,
)
from partner.fulfillment.pipeline import tracker_fulfill
from partner.fulfillment.selectors import tracker_held_for
from partner.fulfillment.services import tracker_give_up, tracker_retry_scheduled
from partner.platform.errors import ServiceError

logger = logging.getLogger(__name__)


class FulfillTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # Final failure (retries exhausted or an unexpected error): the tracker says so.
        tracker_id = kwargs.get("tracker_id", args[0] if args else None)
        if tracker_id is not None:
            tracker_give_up(tracker_id=tracker_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, base=FulfillTask, name=FULFILL_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def fulfill(self, tracker_id: int, rate_limited_since: float | None = None):
    # `rate_limited_since` is the retry rule's, carried from run to run (partner.core.retries).
    try:
        done = tracker_fulfill(tracker_id=tracker_id)
    except ServiceError as exc:  # only transient ones reach here: the service said "later"
        plan = task_retry_plan(self, exc)
        tracker_retry_scheduled(tracker_id=tracker_id, countdown=plan.countdown, error=str(exc))
        raise task_retry(self, exc, plan)
    if done is None:
        # Held by another worker: a live one renews its lease, a dead one's runs out within
        # LEASE_SECONDS. Come back then (a redelivered message of a killed worker lands here).
        held_for = tracker_held_for(tracker_id)
        if held_for:
            tracker_fulfill_enqueue(tracker_id, countdown=held_for + 1)


# The full pass reads every page of the transaction list: 2,000 calls for 100,000 transactions, far
# longer than the tasks' default limits (CELERY_TASK_SOFT_TIME_LIMIT, 120 s) allow. Once a day.
RECONCILE_SOFT_TIME_LIMIT = 3600


@shared_task(name=RECONCILE_TASK, soft_time_limit=RECONCILE_SOFT_TIME_LIMIT, time_limit=RECONCILE_SOFT_TIME_LIMIT + 60)
def reconcile(full: bool = False):
    # Beat's runs: the cheap pass, and the full one when due. `full=True` reads every page now
    # (`celery -A config call fulfillment.reconcile --kwargs '{"full": true}'`).
    return reconciliation.transactions_reconcile(full=full)


@shared_task(name=SWEEP_TASK)
def sweep():
    return reconciliation.trackers_sweep()


class DeliveriesTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # Retries ran out (or an unexpected error): the delivery it stopped at says so; staff may send it again.
        tracker_id = kwargs.get("tracker_id", args[0] if args else None)
        if tracker_id is not None:
            staff.deliveries_give_up(tracker_id=tracker_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, base=DeliveriesTask, name=DELIVERIES_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def deliveries(self, tracker_id: int, rate_limited_since: float | None = None):
    """Send the staff's waiting deliveries of one order (partner.fulfillment.deliveries).

    `rate_limited_since` is the retry rule's, carried from run to run (partner.core.retries).
    """
    try:
        sent = deliveries_send(tracker_id=tracker_id)
    except ServiceError as exc:  # transient: the service said "later"; what was sent stays sent
        raise task_retry(self, exc)
    if sent is None:
        held_for = order_held_for(tracker_id)
        if held_for:
            deliveries_send_enqueue(tracker_id, countdown=held_for + 1)
    return sent


@shared_task(name=OVERDUE_TASK)
def overdue():
    """Tell staff of the orders past their due time (beat, every few minutes)."""
    return staff_events.overdue_tell()
