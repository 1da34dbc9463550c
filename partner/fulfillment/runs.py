"""An order's run: whatever is left of its work, by one worker at a time, and what happens when it stops.

One way to run an order, whoever runs it: the inbox's task for the first run of a new order
(`order_work`, in the task of the webhook that created it, on the lease it was created with), and
the order's task for every other run (`order_run`: a retry, a staff member's delivery, a run handed
back from a dead worker, the sweep). A run holds the order's lease (`partner.core.leases`) and does
what is not yet done, in this order:

1. prepare the order, if it is new (`automated.pipeline.order_prepare`): read, check, work, store
   the response and the delivery that sends it; a permanent refusal fails the order, with a notice
   for the lender where they can act on it;
2. send every delivery that waits (`sending.sender.deliveries_send`): the result, the acknowledgement,
   the staff's deliveries, the failure notice; then release the order only where nothing waits, in
   one statement (`Lease.release_unless`), and otherwise send what was stored meanwhile and try
   again. Whoever stores work for an order hands it to its run after commit (`order_run_enqueue`);
   a task that finds the order held ends, because the holder cannot release the order while work
   stored before the release waits (docs/architecture.md, "Who wakes whom").

When a run stops on an error, one function decides what comes next (`_stopped`): a transient
service error is run again later (the rule of `partner.core.retries`: the wait the service asked
for, or a counted backoff), until the retries are spent; a PATCH whose answer was never recorded
waits for its callback, uncounted (`sender._answer_await`); one of our own services away (the
database, the cache, the broker) is waited for, uncounted, for as long as it lasts, the order's
`last_error` saying which; when the retries are spent, or on an unexpected error, the run gives
up: the order fails ("gave up after retries"), or, when the order is with staff, the delivery it
stopped at fails and staff may send it again.
"""

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import F
from django.utils import timezone

from partner.core.checkpoints import checkpoint
from partner.core.leases import Lease, LeaseLost, lease_give_back, lease_kept, lease_remaining, lease_take_one
from partner.core.logging import log_context
from partner.core.outbound import kept
from partner.core.retries import SERVICE_CALLS, AnswerAwaited, RetryPlan, outage_of, retry_plan
from partner.fulfillment.automated.pipeline import order_prepare
from partner.fulfillment.models import (
    ACTIVE_STATUSES,
    PIPELINE_KINDS,
    Delivery,
    DeliveryState,
    FailureCode,
    Order,
)
from partner.fulfillment.orders.history import step_record, steps_batched
from partner.fulfillment.orders.selectors import work_left
from partner.fulfillment.orders.services import OrderFailed, order_fail, order_refused
from partner.fulfillment.orders.states import delivery_move
from partner.fulfillment.sending.sender import deliveries_send
from partner.platform.errors import RequestRefused, ServiceError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended: how many deliveries it `sent`; `retry` when it is to run again (and `error`,
    why); `held_for` when another worker holds the order (seconds until that lease runs out)."""

    sent: int = 0
    retry: RetryPlan | None = None
    error: Exception | None = None
    held_for: float = 0.0


def order_run(
    *, order_id: int, retries: int = 0, rate_limited_since: float | None = None, outage_since: float | None = None
) -> RunOutcome:
    """Take the order and do what is left of its work (the order's task). Another worker holding it
    is told by `held_for`; an order with nothing left is left alone."""
    taken = lease_take_one(
        Order.objects.filter(work_left(), pk=order_id), attempts=F("attempts") + 1, next_attempt_at=None
    )
    if taken is None:
        return RunOutcome(held_for=lease_remaining(Order.objects.filter(pk=order_id)))
    order, lease = taken
    return order_work(order, lease, retries=retries, rate_limited_since=rate_limited_since, outage_since=outage_since)


def order_work(
    order: Order,
    lease: Lease,
    *,
    retries: int = 0,
    rate_limited_since: float | None = None,
    outage_since: float | None = None,
) -> RunOutcome:
    """Do what is left of the work of an order this worker holds (`lease`); the lease is released
    when the run ends. `retries`: the runs before this one that counted against the retry budget;
    `rate_limited_since`, `outage_since`: the retry rule's, carried from run to run."""
    with log_context(order_id=order.pk, transaction_id=order.transaction_id):  # its failure's lines too
        try:
            with steps_batched(), lease_kept(lease):
                sent = _steps(order, lease)
        except Exception as exc:
            return _stopped(
                order, lease, exc, retries=retries, rate_limited_since=rate_limited_since, outage_since=outage_since
            )
        finally:
            lease_give_back(lease)  # unless the run released it already (where nothing waits)
    return RunOutcome(sent=sent)


def _steps(order: Order, lease: Lease) -> int:
    waiting = None
    if order.prepared_at is None and order.status in ACTIVE_STATUSES:
        try:
            waiting = [order_prepare(order, lease)]  # the delivery it made, and its documents
        except OrderFailed as failure:
            order_fail(order=order, code=failure.code, reason=failure.message, tell_lender=failure.tell_lender)
            waiting = None  # its notice, if the lender is told
        except (ServiceError, RequestRefused) as exc:
            # Refused for good, by the service or by us before any request (an id that may not go
            # into the service's path): refused again on every run, so the order fails with it.
            if exc.transient:
                raise
            order_refused(order=order, error=exc)
            return 0
    sent = 0
    while True:
        sent += deliveries_send(order, lease, waiting=waiting)
        waiting = None
        checkpoint("run.looked")
        # Released only where nothing waits, in one statement; else what was stored meanwhile is sent.
        if lease.release_unless(work_left()):
            return sent


def _stopped(
    order: Order,
    lease: Lease,
    exc: Exception,
    *,
    retries: int,
    rate_limited_since: float | None,
    outage_since: float | None = None,
) -> RunOutcome:
    """The one rule of what follows a run that stopped on `exc`: run again later, or give up."""
    if isinstance(exc, LeaseLost):
        logger.warning("transaction %s: the run stopped, its lease lost (%s)", order.transaction_id, exc)
        return RunOutcome()
    if isinstance(exc, AnswerAwaited):
        # A PATCH without a recorded answer: its callback is waited for. The sender gave the order
        # back itself, under the order's lock, with the time of this next run (`sender._answer_await`).
        logger.warning("transaction %s: %s", order.transaction_id, exc)
        return RunOutcome(retry=retry_plan(exc, retries=retries, rate_limited_since=rate_limited_since), error=exc)
    waits_for_us = outage_of(exc) is not None  # one of our own services is away: wait, never fail
    if waits_for_us or (isinstance(exc, ServiceError) and exc.transient):
        plan = retry_plan(exc, retries=retries, rate_limited_since=rate_limited_since, outage_since=outage_since)
        if not plan.counted or not SERVICE_CALLS.spent(retries):
            if plan.waiting_for:
                logger.warning("transaction %s: %s", order.transaction_id, plan.reason(exc))
            # The lease given back with the error and the time of the next run, in one UPDATE (when
            # the database is what is away, the lease runs out instead and the order is handed back).
            lease_give_back(
                lease,
                last_error=kept(plan.reason(exc)),
                next_attempt_at=timezone.now() + timedelta(seconds=plan.countdown),
            )
            return RunOutcome(retry=plan, error=exc)
    else:
        logger.error("transaction %s: the run stopped on an error", order.transaction_id, exc_info=exc)
    lease.release()
    order_give_up(order_id=order.pk, error=f"{type(exc).__name__}: {exc}")
    return RunOutcome()


def order_give_up(*, order_id: int, error: str) -> None:
    """The run's retries ran out (or it met an unexpected error): fail the order while it is the
    pipeline's (not prepared, or its result or acknowledgement not sent); fail the staff delivery it
    stopped at otherwise, for staff to send again."""
    order = Order.objects.filter(pk=order_id).first()
    if order is None:
        return
    reason = f"Gave up after retries: {error}"
    waiting = order.deliveries.filter(state=DeliveryState.PENDING).order_by("created_at", "id").first()
    if waiting is not None:
        delivery_move(
            Delivery.objects.filter(pk=waiting.pk),
            DeliveryState.FAILED,
            failed_at=timezone.now(),
            failure_reason=kept(reason),
        )
    if order.status in ACTIVE_STATUSES and (waiting is None or waiting.kind in PIPELINE_KINDS):
        order_fail(order=order, code=FailureCode.RETRIES_EXHAUSTED, reason=reason)
    elif waiting is not None:
        step_record(order, "delivery_failed", f"{waiting.get_kind_display()}: gave up after retries")
