"""The life of an order around its work: opened, failed, completed, put back to work.

`order_open` creates the order when the transaction webhook (or the reconciliation) tells us of a
transaction; its work is an order's run (`partner.fulfillment.runs`). `order_fail` records a
permanent failure and, where that helps the lender, stores the notice that tells them (sent by the
run that failed the order); `order_complete` is the service's confirmation of our final response;
`order_retry` puts a failed order back to work (the admin's action). Every status write goes
through the order's table of moves (`partner.fulfillment.orders.states`).

Who works an order and by when: `due_at` is when a staff-worked order is due (its product's
turnaround from its arrival); `order_assign` is the one write of who works it (a staff member who
takes it, a partner's own order system that is given it), with its step and its announcement.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from partner.core.errors import ApplicationError
from partner.core.leases import Lease, lease_of_created, lease_until
from partner.fulfillment.enqueue import order_run_enqueue
from partner.fulfillment.models import (
    PIPELINE_KINDS,
    Delivery,
    DeliveryKind,
    DeliveryState,
    FailureCode,
    Order,
    OrderStatus,
)
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.history import first_time, step_record
from partner.fulfillment.orders.metrics import order_completed, order_declined, order_failed
from partner.fulfillment.orders.states import (
    SETTLED_BY,
    delivery_move,
    order_move,
    order_move_check,
    order_move_returning,
)

logger = logging.getLogger(__name__)

PARTNER_STATUS_MAX = 500  # partnerStatus, what the lender reads: the spec's limit
FAILURE_NOTICE_PREFIX = "Order not fulfilled: "  # what the lender reads before the reason


class OrderFailed(ApplicationError):
    """A permanent failure: the order is failed and not retried.

    `message` is the reason, written for a person (staff read it; the lender too when
    `tell_lender`); `extra` holds the `FailureCode` (`code`) and `tell_lender`.
    """

    def __init__(self, code: str, reason: str, *, tell_lender: bool = False):
        super().__init__(reason, extra={"code": code, "tell_lender": tell_lender})

    @property
    def code(self) -> str:
        return self.extra["code"]

    @property
    def tell_lender(self) -> bool:
        return self.extra["tell_lender"]


def transaction_ref(transaction_id: str) -> str:
    """The transaction's address on the service, for an order opened without a notification."""
    return f"{settings.SVC_BASE_URL}/partner/v2/transactions/{transaction_id}"


def due_at(product, start: datetime) -> datetime | None:
    """When an order of `product` that arrived at `start` is due: the product's turnaround later
    (`Product.turnaround_hours`); None when the product promises none."""
    hours = getattr(product, "turnaround_hours", None)
    return start + timedelta(hours=hours) if hours else None


def order_open(
    *, transaction_id: str, resource_ref: str = "", product_name: str = "", work_here: bool = False
) -> tuple[Order, bool, Lease | None]:
    """The order of a transaction, created in VALIDATION_REQUESTED the first time we hear of it;
    returns (order, created, lease).

    Each call hands the order to a worker (after commit): a repeated notification restarts an
    order whose task was lost, and the run of a finished order does nothing. Safe when two
    callers race: the unique transaction id decides, the loser reads the winner's row.
    `work_here`: the caller runs an order it creates itself, so the order is created taken, with
    the caller's lease (returned) and first attempt, and no task is sent for it.
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
    if created and work_here:
        return order, created, lease_of_created(order)
    order_run_enqueue(order.pk)
    return order, created, None


# Failures that came from the notification itself (its resourceRef or product name), not from the
# transaction: a later valid notification of the same transaction reopens the order.
NOTIFICATION_FAILURES = (FailureCode.RESOURCE_OUTSIDE_SERVICE, FailureCode.PRODUCT_UNKNOWN)


def _reopen_if_failed_by_its_notification(order: Order, *, resource_ref: str, product_name: str) -> None:
    """A forged or broken notification that arrived first must not doom the genuine one."""
    if order.status != OrderStatus.FAILED or order.failure_code not in NOTIFICATION_FAILURES:
        return
    if order.prepared_at is not None or not resource_ref or resource_ref == order.resource_ref:
        return
    reopened = order_move(
        Order.objects.filter(pk=order.pk, prepared_at__isnull=True),
        OrderStatus.VALIDATION_REQUESTED,
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
    """Fail the order for good. Where the lender can act on the reason (`tell_lender`), a failure
    notice is stored with it, which the run that failed the order sends."""
    now = timezone.now()
    with transaction.atomic():
        failed = order_move(
            Order.objects.filter(pk=order.pk),
            OrderStatus.FAILED,
            failure_code=code,
            failure_reason=reason[:2000],
            failed_at=now,
            updated_at=now,
        )
        if failed and tell_lender:
            Delivery.objects.create(
                order=order,
                kind=DeliveryKind.FAILURE_NOTICE,
                partner_status=f"{FAILURE_NOTICE_PREFIX}{reason}"[:PARTNER_STATUS_MAX],
            )
        step_record(order, "failed", reason)
        if failed:
            announcements.order_announce(order_id=order.pk, what=announcements.FAILED)
    if failed:
        order_failed(order, code)
    logger.warning("transaction %s failed: %s (%s)", order.transaction_id, reason, code)


def order_complete(*, transaction_id: str, event_id: str = "", because: str = "") -> Order | None:
    """The service processed our final response: REQUEST_COMPLETED, whatever step the order recorded
    last. Returns the order as it stands (None when there is none).

    A failed order stays failed; a completed one is left as it is (a replayed callback changes
    nothing: no second step, the first completion time kept). Without a callback event, `because`
    says what completed it (the service's transaction list, a staff member). The completion is one
    statement that returns the row; the order is read only when it did not complete one.
    """
    now = timezone.now()
    with transaction.atomic():  # the completion and what it announces, together
        completed = order_move_returning(
            Order.objects.filter(transaction_id=transaction_id),
            OrderStatus.REQUEST_COMPLETED,
            completed_at=now,
            # The service processed our response, so it was delivered, even if the worker
            # that sent the PATCH has not recorded it yet.
            delivered_at=first_time("delivered_at", now),
            event_id=event_id,
            updated_at=now,
        )
        if completed:
            _completed(completed[0], now, because=because or f"event {event_id}")
    if not completed:
        return Order.objects.filter(transaction_id=transaction_id).first()
    return completed[0]


def _completed(order: Order, now, *, because: str) -> None:
    """What a completion writes beside the order's move: its announcement, figure, step and line."""
    announcements.order_announce(order_id=order.pk, what=announcements.COMPLETED)
    order_completed(order, now)
    step_record(order, "completed", because)
    logger.info("transaction %s: request completed (%s)", order.transaction_id, because)


def order_lock(rows) -> int | None:
    """Lock the row of the order of `rows` (a queryset of orders) until the caller's transaction
    ends, and return its id (None: no such order). Whoever changes the state of an order's
    deliveries (the sender's record of a PATCH, a callback's confirmation) takes it first, so that
    they follow one another on one order, and always in this order (the order, then its
    deliveries), so that two of them never wait for each other."""
    return rows.select_for_update().values_list("pk", flat=True).first()


def order_settle(*, order_id: int, delivery: Delivery, event_id: str = "") -> str | None:
    """Move the order to what its deliveries say now that `delivery` changed state (sent or
    confirmed), by `states.SETTLED_BY`: delivered once its result or final delivery is sent,
    completed once that is confirmed, declined once its decline is sent. The one rule by which
    deliveries move their order, called in the transaction that changed the delivery, after
    `order_lock`, by the sender's record of a PATCH and by the "processed" callback, whichever comes
    first; a move already made is not made again and an order never moves back (the table's guard
    in the UPDATE). Only a change of the order's ending delivery can move it, so the others cost no
    statement. `event_id`: the callback's. Returns the status moved to (None: no move)."""
    to = SETTLED_BY.get((delivery.kind, delivery.state))
    if to is None:
        return None
    now = timezone.now()
    rows = Order.objects.filter(pk=order_id)
    if to == OrderStatus.REQUEST_COMPLETED:
        because = "" if event_id else "processed before our record of the send"
        completed = order_move_returning(
            rows, to, completed_at=now, delivered_at=first_time("delivered_at", now), event_id=event_id, updated_at=now
        )
        if not completed:
            return None
        _completed(completed[0], now, because=because or f"event {event_id}")
    elif to == OrderStatus.RESPONSE_DELIVERED:
        if not order_move(rows, to, delivered_at=first_time("delivered_at", now), updated_at=now):
            return None
    else:
        declined = order_move_returning(rows, to, updated_at=now)
        if not declined:
            return None
        order_declined(declined[0])
        announcements.order_announce(order_id=order_id, what=announcements.DECLINED, delivery_id=delivery.pk)
    return to


def order_retry(*, order_id: int) -> bool:
    """Admin action: put a failed order back to work from its last completed step (a response the
    service refused is sent again), and hand it to a worker (after commit). False when the order is
    not failed, or its data was purged (left alone)."""
    with transaction.atomic():
        order = Order.objects.select_for_update().filter(pk=order_id, status=OrderStatus.FAILED).first()
        if order is None:
            return False
        if order.prepared_at and order.response is None and order.delivered_at is None:
            # Its data was purged (retention): a retry would deliver an empty response.
            return False
        to = OrderStatus.IN_PROGRESS if order.prepared_at else OrderStatus.VALIDATION_REQUESTED
        order_move_check(order.status, to)
        order_move(
            Order.objects.filter(pk=order.pk),
            to,
            failure_code="",
            failure_reason="",
            failed_at=None,
            claimed_until=None,
            next_attempt_at=None,
            updated_at=timezone.now(),
        )
        delivery_move(
            order.deliveries.filter(kind__in=PIPELINE_KINDS),
            DeliveryState.PENDING,
            failed_at=None,
            failure_reason="",
            updated_at=timezone.now(),
        )
        step_record(order, "retry_requested")
        order_run_enqueue(order.pk)
    return True


def order_confirm(*, order_id: int, by: str) -> bool:
    """Staff confirm by hand that the service processed a delivered order (its callback was lost)."""
    order = Order.objects.filter(pk=order_id, status=OrderStatus.RESPONSE_DELIVERED).first()
    if order is None:
        return False
    order_complete(transaction_id=order.transaction_id, because=f"confirmed by {by}")
    return True


def order_assign(*, order: Order, user) -> bool:
    """`user` works the order from now on: it is assigned to them, the step written (`taken`, or
    `taken_over` naming who held it; by `user`) and the order announced `TAKEN`, all in the caller's
    transaction. Who may take an order is the caller's rule (`staff.services.order_take`, the
    connector's systems); this is the one write of it.

    Written only while the order is held by whoever the caller read (`order.assigned_to`, or
    nobody): False, nothing written, when someone else took it meanwhile. True, nothing written,
    when it is `user`'s already."""
    held_by = order.assigned_to_id
    if held_by == user.pk:
        return True
    rows = Order.objects.filter(pk=order.pk)
    rows = rows.filter(assigned_to__isnull=True) if held_by is None else rows.filter(assigned_to=held_by)
    now = timezone.now()
    if not rows.update(assigned_to=user, assigned_at=now, updated_at=now):
        return False
    previous = order.assigned_to.get_username() if held_by is not None else ""
    order.assigned_to, order.assigned_at, order.updated_at = user, now, now
    step_record(
        order,
        "taken_over" if previous else "taken",
        f"from {previous}" if previous else "",
        actor=user.get_username(),
    )
    announcements.order_announce(order_id=order.pk, what=announcements.TAKEN)
    return True
