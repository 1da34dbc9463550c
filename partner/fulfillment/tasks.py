"""Celery tasks of the fulfillment: thin wrappers that call a service.

They are published by name through `enqueue.py` (one function per task), never imported by
the services.
"""

import logging

from celery import Task, shared_task
from django.conf import settings

from partner.core.retries import task_retry, task_retry_plan
from partner.fulfillment.automated.pipeline import order_fulfill
from partner.fulfillment.enqueue import (
    DELIVERIES_TASK,
    FULFILL_TASK,
    OVERDUE_TASK,
    RECONCILE_TASK,
    SWEEP_TASK,
    deliveries_send_enqueue,
    order_fulfill_enqueue,
)
from partner.fulfillment.orders.selectors import order_held_for
from partner.fulfillment.orders.services import order_give_up, order_retry_scheduled
from partner.fulfillment.recovery import reconciliation
from partner.fulfillment.sending.deliveries import deliveries_held_for, deliveries_send
from partner.fulfillment.staff import notices
from partner.fulfillment.staff import services as staff
from partner.platform.errors import ServiceError

logger = logging.getLogger(__name__)


class FulfillTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # Final failure (retries exhausted or an unexpected error): the order says so.
        order_id = kwargs.get("order_id", args[0] if args else None)
        if order_id is not None:
            order_give_up(order_id=order_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, base=FulfillTask, name=FULFILL_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def fulfill(self, order_id: int, rate_limited_since: float | None = None):
    # `rate_limited_since` is the retry rule's, carried from run to run (partner.core.retries).
    try:
        done = order_fulfill(order_id=order_id)
    except ServiceError as exc:  # only transient ones reach here: the service said "later"
        plan = task_retry_plan(self, exc)
        order_retry_scheduled(order_id=order_id, countdown=plan.countdown, error=str(exc))
        raise task_retry(self, exc, plan)
    if done is None:
        # Held by another worker: a live one renews its lease, a dead one's runs out within
        # LEASE_SECONDS. Come back then (a redelivered message of a killed worker lands here).
        held_for = order_held_for(order_id)
        if held_for:
            order_fulfill_enqueue(order_id, countdown=held_for + 1)


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
    return reconciliation.orders_sweep()


class DeliveriesTask(Task):
    def on_failure(self, exc, task_id, args, kwargs, einfo):
        # Retries ran out (or an unexpected error): the delivery it stopped at says so; staff may send it again.
        order_id = kwargs.get("order_id", args[0] if args else None)
        if order_id is not None:
            staff.deliveries_give_up(order_id=order_id, error=f"{type(exc).__name__}: {exc}")


@shared_task(bind=True, base=DeliveriesTask, name=DELIVERIES_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def deliveries(self, order_id: int, rate_limited_since: float | None = None):
    """Send the staff's waiting deliveries of one order (partner.fulfillment.sending.deliveries).

    `rate_limited_since` is the retry rule's, carried from run to run (partner.core.retries).
    """
    try:
        sent = deliveries_send(order_id=order_id)
    except ServiceError as exc:  # transient: the service said "later"; what was sent stays sent
        raise task_retry(self, exc)
    if sent is None:
        held_for = deliveries_held_for(order_id)
        if held_for:
            deliveries_send_enqueue(order_id, countdown=held_for + 1)
    return sent


@shared_task(name=OVERDUE_TASK)
def overdue():
    """Tell staff of the orders past their due time (beat, every few minutes)."""
    return notices.overdue_tell()
