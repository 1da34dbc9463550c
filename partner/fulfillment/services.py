"""The life of a tracker around its work: opened, failed, retried, completed by the service's callback.

`tracker_open` creates the tracker when the transaction webhook (or the reconciliation) tells
us of a transaction; the work itself is `pipeline.tracker_fulfill`. `tracker_complete` is the
service's processed callback; `tracker_fail` records a permanent failure and tells the lender
where that helps them; `tracker_retry` puts a failed tracker back to work (the admin's action).
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
from partner.fulfillment.enqueue import tracker_fulfill_enqueue
from partner.fulfillment.metrics import order_completed, order_failed
from partner.fulfillment.models import ACTIVE_STATUSES, FailureCode, Tracker, TrackerStatus, TrackerStep
from partner.platform import client
from partner.platform.errors import ServiceError

logger = logging.getLogger(__name__)


class TrackerFailed(Exception):
    """A permanent failure: the tracker is failed with `reason` and not retried."""

    def __init__(self, code, reason, *, tell_lender=False):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.tell_lender = tell_lender


def transaction_ref(transaction_id: str) -> str:
    """The transaction's address on the service, for a tracker opened without a notification."""
    return f"{settings.SVC_BASE_URL}/partner/v2/transactions/{transaction_id}"


# The steps of a worker's run, written together when the run ends (`steps_batched`): one INSERT for
# the run instead of one per step. The tracker's own times (prepared_at, slots_requested_at,
# delivered_at) and its documents' are what a resumed run reads; the steps are the history staff read.
_batched_steps: contextvars.ContextVar[list[TrackerStep] | None] = contextvars.ContextVar("steps", default=None)


def step_record(tracker: Tracker, name: str, detail: str = "", *, actor: str = "") -> None:
    step = TrackerStep(tracker=tracker, name=name, detail=detail[:2000], actor=actor[:150], created_at=timezone.now())
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
    batch: list[TrackerStep] = []
    token = _batched_steps.set(batch)
    try:
        yield
    finally:
        _batched_steps.reset(token)
        if batch:
            TrackerStep.objects.bulk_create(batch)


def first_time(field: str, now):
    """An update expression that keeps an earlier time in `field` and sets `now` otherwise."""
    return Coalesce(F(field), Value(now, output_field=DateTimeField()))


def tracker_open(
    *, transaction_id: str, resource_ref: str = "", product_name: str = "", work_here: bool = False
) -> tuple[Tracker, bool]:
    """The tracker of a transaction, created in VALIDATION_REQUESTED the first time we hear of it;
    returns (tracker, created).

    Each call hands the tracker to a worker (after commit): a repeated notification restarts a
    tracker whose task was lost, and the task of a finished tracker does nothing. Safe when two
    callers race: the unique transaction id decides, the loser reads the winner's row.
    `work_here`: the caller works a tracker it creates itself, so the tracker is created taken, with
    the caller's lease and first attempt, and no task is sent for it.
    """
    taken = {"claimed_until": lease_until(), "attempts": 1} if work_here else {}
    try:
        with transaction.atomic():
            tracker = Tracker.objects.create(
                transaction_id=transaction_id,
                resource_ref=resource_ref or transaction_ref(transaction_id),
                product_name=product_name,
                **taken,
            )
            step_record(tracker, "opened", resource_ref)
        created = True
    except IntegrityError:
        tracker, created = Tracker.objects.get(transaction_id=transaction_id), False
        _reopen_if_failed_by_its_notification(tracker, resource_ref=resource_ref, product_name=product_name)
    if not (created and work_here):
        tracker_fulfill_enqueue(tracker.pk)
    return tracker, created


# Failures that came from the notification itself (its resourceRef or product name), not from the
# transaction: a later valid notification of the same transaction reopens the order.
NOTIFICATION_FAILURES = (FailureCode.RESOURCE_OUTSIDE_SERVICE, FailureCode.PRODUCT_UNKNOWN)


def _reopen_if_failed_by_its_notification(tracker: Tracker, *, resource_ref: str, product_name: str) -> None:
    """A forged or broken notification that arrived first must not doom the genuine one."""
    if tracker.status != TrackerStatus.FAILED or tracker.failure_code not in NOTIFICATION_FAILURES:
        return
    if tracker.prepared_at is not None or not resource_ref or resource_ref == tracker.resource_ref:
        return
    reopened = Tracker.objects.filter(pk=tracker.pk, status=TrackerStatus.FAILED, prepared_at__isnull=True).update(
        status=TrackerStatus.VALIDATION_REQUESTED,
        resource_ref=resource_ref,
        product_name=product_name,
        failure_code="",
        failure_reason="",
        failed_at=None,
        updated_at=timezone.now(),
    )
    if reopened:
        step_record(tracker, "reopened", f"a later notification: {resource_ref}")
        logger.warning("transaction %s reopened by a later notification", tracker.transaction_id)


def tracker_fail(*, tracker: Tracker, code: str, reason: str, tell_lender: bool = False) -> None:
    """Fail the tracker for good; tell the lender through partnerStatus where that helps them."""
    now = timezone.now()
    failed = (
        Tracker.objects.filter(pk=tracker.pk)
        .exclude(status=TrackerStatus.REQUEST_COMPLETED)
        .update(
            status=TrackerStatus.FAILED, failure_code=code, failure_reason=reason[:2000], failed_at=now, updated_at=now
        )
    )
    if failed:
        order_failed(tracker, code)
    step_record(tracker, "failed", reason)
    logger.warning("transaction %s failed: %s (%s)", tracker.transaction_id, reason, code)
    if tell_lender:
        try:
            client.patch_response(tracker.transaction_id, {"partnerStatus": f"Order not fulfilled: {reason}"[:500]})
            step_record(tracker, "lender_told", reason)
        except ServiceError as exc:  # the failure stands; the lender still sees it in our UI
            step_record(tracker, "lender_not_told", str(exc))


def tracker_retry_scheduled(*, tracker_id: int, countdown: float, error: str) -> None:
    """A task retry is due in `countdown` seconds: the sweep leaves the tracker alone until then."""
    Tracker.objects.filter(pk=tracker_id).update(
        next_attempt_at=timezone.now() + timedelta(seconds=countdown), last_error=error[:2000]
    )


def tracker_give_up(*, tracker_id: int, error: str) -> None:
    """The task's retries ran out: fail the tracker, unless it finished meanwhile."""
    tracker = Tracker.objects.filter(pk=tracker_id, status__in=ACTIVE_STATUSES).first()
    if tracker is not None:
        tracker_fail(tracker=tracker, code=FailureCode.RETRIES_EXHAUSTED, reason=f"Gave up after retries: {error}")


def tracker_complete(
    *, transaction_id: str, event_id: str = "", because: str = "", automated_only: bool = False
) -> Tracker | None:
    """The processed callback: REQUEST_COMPLETED, whatever step the tracker recorded last. Returns
    the tracker as it stands (None when there is none).

    A failed tracker stays failed; a completed one is left as it is (a replayed callback
    changes nothing: no second step, the first completion time kept). Without a callback event,
    `because` says what completed it (the service's transaction list, a staff member).
    `automated_only`: a staff-worked order is not completed here (its callback confirms a delivery).
    The completion is one statement that returns the row; the tracker is read only when it did not
    complete one.
    """
    now = timezone.now()
    completing = Tracker.objects.filter(transaction_id=transaction_id).exclude(
        status__in=[TrackerStatus.FAILED, TrackerStatus.REQUEST_COMPLETED]
    )
    if automated_only:
        completing = completing.filter(staff_worked=False)
    completed = update_returning(
        completing,
        status=TrackerStatus.REQUEST_COMPLETED,
        completed_at=now,
        # The service processed our response, so it was delivered, even if the worker
        # that sent the PATCH has not recorded it yet.
        delivered_at=first_time("delivered_at", now),
        event_id=event_id,
        updated_at=now,
    )
    if not completed:
        return Tracker.objects.filter(transaction_id=transaction_id).first()
    tracker = completed[0]
    order_completed(tracker, now)
    step_record(tracker, "completed", because or f"event {event_id}")
    logger.info("transaction %s: request completed (%s)", transaction_id, because or f"event {event_id}")
    return tracker


def tracker_retry(*, tracker_id: int) -> bool:
    """Admin action: put a failed tracker back to work from its last completed step, and hand it to
    a worker (after commit). False when the tracker is not failed (left alone)."""
    with transaction.atomic():
        tracker = Tracker.objects.select_for_update().filter(pk=tracker_id, status=TrackerStatus.FAILED).first()
        if tracker is None:
            return False
        if tracker.prepared_at and tracker.response is None and tracker.delivered_at is None:
            # Its data was purged (retention): a retry would deliver an empty response.
            return False
        Tracker.objects.filter(pk=tracker.pk).update(
            status=TrackerStatus.IN_PROGRESS if tracker.prepared_at else TrackerStatus.VALIDATION_REQUESTED,
            failure_code="",
            failure_reason="",
            failed_at=None,
            claimed_until=None,
            next_attempt_at=None,
            updated_at=timezone.now(),
        )
        step_record(tracker, "retry_requested")
        tracker_fulfill_enqueue(tracker.pk)
    return True


def tracker_confirm(*, tracker_id: int, by: str) -> bool:
    """Staff confirm by hand that the service processed a delivered order (its callback was lost)."""
    tracker = Tracker.objects.filter(pk=tracker_id, status=TrackerStatus.RESPONSE_DELIVERED).first()
    if tracker is None:
        return False
    tracker_complete(transaction_id=tracker.transaction_id, because=f"confirmed by {by}")
    return True
