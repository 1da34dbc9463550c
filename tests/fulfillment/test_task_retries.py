"""The retry budget with a real worker: a wait the service asked for spends no retry, a failure does.

An order whose service answers 429 (or 503) with Retry-After more times than its tasks may retry
still completes, on the fulfillment task (GET transaction) and on the inbox's (GET event of the
processed callback) alike; 500s instead give the order up after the fulfillment task's retries.
"""

from collections import Counter

import pytest
from celery.signals import task_prerun

from partner.fulfillment.enqueue import ORDER_RUN_TASK
from partner.fulfillment.models import FailureCode, Order, OrderStatus
from partner.fulfillment.tasks import order_run
from partner.inbox.outbox import PROCESS_TASK
from partner.inbox.tasks import process_notification
from partner.sandbox.faults import fault_set
from partner.sandbox.models import FaultRule
from tests.helpers.sandbox import order_placed
from tests.helpers.service_calls import call_kind
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def finished(transaction_id) -> Order:
    """The transaction's order once it completed or failed."""
    return wait_for(
        lambda: Order.objects.filter(
            transaction_id=transaction_id, status__in=[OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED]
        ).first(),
        timeout=90,
        message=lambda: f"order completed or failed (now {list(Order.objects.values_list('status', 'last_error'))})",
    )


@pytest.fixture
def quick_backoff(settings):
    """Counted retries after a few hundredths of a second: the count matters here, not the wait."""
    settings.CELERY_TASK_RETRY_BACKOFF = 0.01


@pytest.fixture
def task_runs():
    """How many times each task ran (by name), in the worker's threads."""
    runs = Counter()

    def count(sender=None, **kwargs):
        runs[sender.name] += 1

    task_prerun.connect(count, weak=False)
    yield runs
    task_prerun.disconnect(count)


@pytest.mark.parametrize("status", [429, 503])
def test_more_waits_asked_for_than_retries_still_complete_the_order(
    demo, service_calls, celery_worker_live, quick_backoff, task_runs, status
):
    assert order_run.max_retries == process_notification.max_retries
    waits = order_run.max_retries + 3  # more than a counted budget lets either task run
    # Retry-After: 0, so each wait is only the spread (under a second).
    fault_set(endpoint="transaction", status=status, count=waits, retry_after=0)
    fault_set(endpoint="event", status=status, count=waits, retry_after=0)

    txn = order_placed(demo)
    order = finished(txn.id)

    assert (order.status, order.failure_reason) == (OrderStatus.REQUEST_COMPLETED, "")

    answered = Counter((call_kind(call), call["status"]) for call in service_calls)
    assert answered[("transaction", status)] == waits and answered[("event", status)] == waits
    assert answered[("transaction", 200)] >= 1 and answered[("event", 200)] == 1
    # The order's task ran past its counted budget (the notification's first run, where the
    # pipeline does one, took one of the waits), and so did the callback's notification task.
    assert task_runs[ORDER_RUN_TASK] > order_run.max_retries + 1
    assert task_runs[PROCESS_TASK] == 1 + waits + 1  # the transaction's notification, the callback's runs


def test_500s_give_the_order_up_after_the_retries(demo, service_calls, celery_worker_live, quick_backoff, task_runs):
    # The sandbox sends Retry-After with every fault: on a 500 it is no wait asked for, so each counts.
    rule = fault_set(endpoint="transaction", status=500, count=order_run.max_retries + 5, retry_after=0)

    txn = order_placed(demo)
    order = finished(txn.id)

    assert order.status == OrderStatus.FAILED and order.failure_code == FailureCode.RETRIES_EXHAUSTED
    assert order.failure_reason.startswith("Gave up after retries")
    assert task_runs[ORDER_RUN_TASK] == 1 + order_run.max_retries  # one run and its retries, then no more
    assert FaultRule.objects.get(pk=rule.pk).remaining > 0  # it gave up; the service did not stop failing
    assert {call["status"] for call in service_calls if call_kind(call) == "transaction"} == {500}
