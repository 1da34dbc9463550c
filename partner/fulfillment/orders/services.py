"""The life of an order around its work: opened, failed, retried, completed by the service's callback.

`order_open` creates the order when the transaction webhook (or the reconciliation) tells
us of a transaction; the work itself is `pipeline.order_fulfill`. `order_complete` is the
service's processed callback; `order_fail` records a permanent failure and tells the lender
where that helps them; `order_retry` puts a failed order back to work (the admin's action).
"""

import contextlib
import contextvars
import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from partner.core.leases import lease_until
from partner.core.returning import update_returning
from partner.fulfillment.enqueue import order_fulfill_enqueue
from partner.fulfillment.models import ACTIVE_STATUSES, FailureCode, Order, OrderStatus, OrderStep
from partner.fulfillment.orders.metrics import order_completed, order_failed
from partner.platform import client
from partner.platform.errors import ServiceError

logger = logging.getLogger(__name__)


class OrderFailed(Exception):
    """A permanent failure: the order is failed with `reason` and not retried."""

    def __init__(self, code, reason, *, tell_lender=False):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.tell_lender = tell_lender


def transaction_ref(transaction_id: str) -> str:
    """The transaction's address on the service, for an order opened without a notification."""
    return f"{settings.SVC_BASE_URL}/partner/v2/transactions/{transaction_id}"


# The steps of a worker's run, written together when the run ends (`steps_batched`): one INSERT for
# the run instead of one per step. The order's own times (prepared_at, slots_requested_at,
# delivered_at) and its documents' are what a resumed run reads; the steps are the history staff read.
_batched_steps: contextvars.ContextVar[list[OrderStep] | None] = contextvars.ContextVar("steps", default=None)


def step_record(order: Order, name: str, detail: str = "", *, actor: str = "") -> None:
    step = OrderStep(order=order, name=name, detail=detail[:2000], actor=actor[:150], created_at=timezone.now())
    batch = _batched_steps.get()
    if batch is not None:
        batch.append(step)
    else:
        step.save()


@contextlib.contextmanager
def steps_batched():
    """Hold the steps recorded in the block and write them in one INSERT when it ends, however it
    ends. A worker killed in the block loses that run's history lines, never its progress."""
    if _batched_steps.get() is not None:  # inside another batch: its end writes these too
        yield
        return
    batch: list[OrderStep] = []
    token = _batched_steps.set(batch)
    try:
        yield
    finally:
        _batched_steps.reset(token)
        if batch:
            OrderStep.objects.bulk_create(batch)


def first_time(field: str, now):
    """An update expression that keeps an earlier time in `field` and sets `now` otherwise."""
    return Coalesce(F(field), Value(now, output_field=DateTimeField()))


def order_open(
    *, transaction_id: str, resource_ref: str = "", product_name: str = "", work_here: bool = False
) -> tuple[Order, bool]:
    """The order of a transaction, created in VALIDATION_REQUESTED the first time we hear of it;
    returns (order, created).

    Each call hands the order to a worker (after commit): a repeated notification restarts a
    order whose task was lost, and the task of a finished order does nothing. Safe when two
    callers race: the unique transaction id decides, the loser reads the winner's row.
    `work_here`: the caller works an order it creates itself, so the order is created taken, with
    the caller's lease and first attempt, and no task is sent for it.
    """
    taken = {"claimed_until": lease_until(), "attempts": 1} if work_here else {}
    try:
        with transaction.atomic():
            order = Order.objects.create(
                transaction_id=transaction_id,
                resource_ref=resource_ref or transaction_ref(transaction_id),
                product_name=product_name,
                **taken,
            )
            step_record(order, "opened", resource_ref)
        created = True
    except IntegrityError:
        order, created = Order.objects.get(transaction_id=transaction_id), False
        _reopen_if_failed_by_its_notification(order, resource_ref=resource_ref, product_name=product_name)
    if not (created and work_here):
        order_fulfill_enqueue(order.pk)
    return order, created


# Failures that came from the notification itself (its resourceRef or product name), not from the
# transaction: a later valid notification of the same transaction reopens the order.
NOTIFICATION_FAILURES = (FailureCode.RESOURCE_OUTSIDE_SERVICE, FailureCode.PRODUCT_UNKNOWN)


def _reopen_if_failed_by_its_notification(order: Order, *, resource_ref: str, product_name: str) -> None:
    """A forged or broken notification that arrived first must not doom the genuine one."""
    if order.status != OrderStatus.FAILED or order.failure_code not in NOTIFICATION_FAILURES:
        return
    if order.prepared_at is not None or not resource_ref or resource_ref == order.resource_ref:
        return
    reopened = Order.objects.filter(pk=order.pk, status=OrderStatus.FAILED, prepared_at__isnull=True).update(
        status=OrderStatus.VALIDATION_REQUESTED,
        resource_ref=resource_ref,
        product_name=product_name,
        failure_code="",
        failure_reason="",
        failed_at=None,
        updated_at=timezone.now(),
    )
    if reopened:
        step_record(order, "reopened", f"a later notification: {resource_ref}")
        logger.warning("transaction %s reopened by a later notification", order.transaction_id)


def order_fail(*, order: Order, code: str, reason: str, tell_lender: bool = False) -> None:
    """Fail the order for good; tell the lender through partnerStatus where that helps them."""
    now = timezone.now()
    failed = (
        Order.objects.filter(pk=order.pk)
        .exclude(status=OrderStatus.REQUEST_COMPLETED)
        .update(
            status=OrderStatus.FAILED, failure_code=code, failure_reason=reason[:2000], failed_at=now, updated_at=now
        )
    )
    if failed:
        order_failed(order, code)
    step_record(order, "failed", reason)
    logger.warning("transaction %s failed: %s (%s)", order.transaction_id, reason, code)
    if tell_lender:
        try:
            client.patch_response(order.transaction_id, {"partnerStatus": f"Order not fulfilled: {reason}"[:500]})
            step_record(order, "lender_told", reason)
        except ServiceError as exc:  # the failure stands; the lender still sees it in our UI
            step_record(order, "lender_not_told", str(exc))


def order_retry_scheduled(*, order_id: int, countdown: float, error: str) -> None:
    """A task retry is due in `countdown` seconds: the sweep leaves the order alone until then."""
    Order.objects.filter(pk=order_id).update(
        next_attempt_at=timezone.now() + timedelta(seconds=countdown), last_error=error[:2000]
    )


def order_give_up(*, order_id: int, error: str) -> None:
    """The task's retries ran out: fail the order, unless it finished meanwhile."""
    order = Order.objects.filter(pk=order_id, status__in=ACTIVE_STATUSES).first()
    if order is not None:
        order_fail(order=order, code=FailureCode.RETRIES_EXHAUSTED, reason=f"Gave up after retries: {error}")


def order_complete(
    *, transaction_id: str, event_id: str = "", because: str = "", automated_only: bool = False
) -> Order | None:
    """The processed callback: REQUEST_COMPLETED, whatever step the order recorded last. Returns
    the order as it stands (None when there is none).

    A failed order stays failed; a completed one is left as it is (a replayed callback
    changes nothing: no second step, the first completion time kept). Without a callback event,
    `because` says what completed it (the service's transaction list, a staff member).
    `automated_only`: a staff-worked order is not completed here (its callback confirms a delivery).
    The completion is one statement that returns the row; the order is read only when it did not
    complete one.
    """
    now = timezone.now()
    completing = Order.objects.filter(transaction_id=transaction_id).exclude(
        status__in=[OrderStatus.FAILED, OrderStatus.REQUEST_COMPLETED]
    )
    if automated_only:
        completing = completing.filter(staff_worked=False)
    completed = update_returning(
        completing,
        status=OrderStatus.REQUEST_COMPLETED,
        completed_at=now,
        # The service processed our response, so it was delivered, even if the worker
        # that sent the PATCH has not recorded it yet.
        delivered_at=first_time("delivered_at", now),
        event_id=event_id,
        updated_at=now,
    )
    if not completed:
        return Order.objects.filter(transaction_id=transaction_id).first()
    order = completed[0]
    order_completed(order, now)
    step_record(order, "completed", because or f"event {event_id}")
    logger.info("transaction %s: request completed (%s)", transaction_id, because or f"event {event_id}")
    return order


def order_retry(*, order_id: int) -> bool:
    """Admin action: put a failed order back to work from its last completed step, and hand it to
    a worker (after commit). False when the order is not failed (left alone)."""
    with transaction.atomic():
        order = Order.objects.select_for_update().filter(pk=order_id, status=OrderStatus.FAILED).first()
        if order is None:
            return False
        if order.prepared_at and order.response is None and order.delivered_at is None:
            # Its data was purged (retention): a retry would deliver an empty response.
            return False
        Order.objects.filter(pk=order.pk).update(
            status=OrderStatus.IN_PROGRESS if order.prepared_at else OrderStatus.VALIDATION_REQUESTED,
            failure_code="",
            failure_reason="",
            failed_at=None,
            claimed_until=None,
            next_attempt_at=None,
            updated_at=timezone.now(),
        )
        step_record(order, "retry_requested")
        order_fulfill_enqueue(order.pk)
    return True


def order_confirm(*, order_id: int, by: str) -> bool:
    """Staff confirm by hand that the service processed a delivered order (its callback was lost)."""
    order = Order.objects.filter(pk=order_id, status=OrderStatus.RESPONSE_DELIVERED).first()
    if order is None:
        return False
    order_complete(transaction_id=order.transaction_id, because=f"confirmed by {by}")
    return True
