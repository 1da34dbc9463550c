"""Every Celery task of the fulfillment, in one place: thin wrappers that call a service.

They are published by name through `enqueue.py` (one function per task), never imported by
the services.
"""

from celery import shared_task
from django.conf import settings

from partner.core.mail import mail_task_run
from partner.core.retries import task_retry
from partner.fulfillment import runs
from partner.fulfillment.enqueue import (
    ORDER_RUN_TASK,
    OVERDUE_TASK,
    RECONCILE_TASK,
    STAFF_NOTICE_TASK,
    SWEEP_TASK,
    order_run_enqueue,
)
from partner.fulfillment.recovery import reconciliation, sweeps
from partner.fulfillment.staff import notices


@shared_task(bind=True, name=ORDER_RUN_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def order_run(self, order_id: int, rate_limited_since: float | None = None, outage_since: float | None = None):
    """Run the order: what is left of its work (`partner.fulfillment.runs`). `rate_limited_since`
    and `outage_since` are the retry rule's, carried from run to run (partner.core.retries)."""
    outcome = runs.order_run(
        order_id=order_id,
        retries=self.request.retries,
        rate_limited_since=rate_limited_since,
        outage_since=outage_since,
    )
    if outcome.retry is not None:
        raise task_retry(self, outcome.error, outcome.retry)
    if outcome.held_for:
        # Held by another worker: a live one renews its lease, a dead one's runs out within
        # LEASE_SECONDS. Come back then (a redelivered message of a killed worker lands here).
        order_run_enqueue(order_id, countdown=outcome.held_for + 1)


# The full pass reads every page of the transaction list (one call per 50 transactions), far
# longer than the tasks' default limits (CELERY_TASK_SOFT_TIME_LIMIT, 120 s) allow. Once a day.
RECONCILE_SOFT_TIME_LIMIT = 3600


@shared_task(name=RECONCILE_TASK, soft_time_limit=RECONCILE_SOFT_TIME_LIMIT, time_limit=RECONCILE_SOFT_TIME_LIMIT + 60)
def reconcile(full: bool = False):
    # Beat's runs: the cheap pass, and the full one when due. `full=True` reads every page now
    # (`celery -A config call fulfillment.reconcile --kwargs '{"full": true}'`).
    return reconciliation.transactions_reconcile(full=full)


@shared_task(name=SWEEP_TASK)
def sweep():
    return sweeps.orders_sweep()


@shared_task(name=OVERDUE_TASK)
def overdue():
    """Enqueue the notices owed: orders past their due time, new-order notices not sent (beat, every few minutes)."""
    return notices.notices_due()


@shared_task(bind=True, name=STAFF_NOTICE_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def staff_notice(
    self, order_id: int, notice: str, rate_limited_since: float | None = None, outage_since: float | None = None
):
    """E-mail staff one notice of an order; a mail server's error is retried (partner.core.retries),
    and a notice whose retries are spent is enqueued again by `overdue` (it is marked only once sent)."""
    return mail_task_run(self, lambda: notices.staff_notice_send(order_id=order_id, notice=notice))
