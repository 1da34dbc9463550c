"""What the fulfillment keeps of a finished order, and for how long (partner/core/retention.py).

An order is finished when it is completed, failed or declined; every other status (validation
requested, in progress, delivered and awaiting the service's callback) is open, and nothing of an
open order is ever touched. Counted from when the order finished:

- order data (RETENTION_ORDER_DATA_DAYS): the request as the lender sent it and its loan number, the
  response we delivered (loan data: the corrected property address, the result), the loan data and
  results of staff deliveries, the last error and failure reason, the details of its steps (which
  may quote a ZIP code) and the answers kept of the calls tried for its deliveries are erased;
- documents (RETENTION_DOCUMENT_DAYS): each document's file (the PDF report, staff uploads) is
  deleted from the storage and its spent upload location and authorization erased; its name, type,
  size, resource id and upload time stay;
- steps (RETENTION_STEP_DAYS): the order's step rows are deleted.

The order's skeleton stays for good: transaction id, product, who ordered, request type, status,
reference number, resource id and every step time. It holds no borrower data, feeds the dashboard,
and is what makes a late or repeated notification of that transaction open nothing new.

Registered with the purge by the app's AppConfig.ready (partner/fulfillment/apps.py), with the
finder of the transactions whose order is open (`transactions_with_open_order`).
"""

from collections.abc import Iterator
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet

from partner.core.retention import DELETE, ERASE, PurgeKind, pk_batches
from partner.fulfillment.models import (
    FINAL_STATUSES,
    Delivery,
    DeliveryAttempt,
    Order,
    OrderDocument,
    OrderStatus,
    OrderStep,
)

FINISHED_STATUSES = FINAL_STATUSES


def orders_open() -> QuerySet:
    """Orders not finished: a status added later counts as open until this module says otherwise."""
    return Order.objects.exclude(status__in=FINISHED_STATUSES)


def transactions_with_open_order(transaction_ids: list[str]) -> set[str]:
    return set(orders_open().filter(transaction_id__in=transaction_ids).values_list("transaction_id", flat=True))


def orders_finished_before(cutoff: datetime) -> QuerySet:
    return Order.objects.filter(
        Q(status=OrderStatus.REQUEST_COMPLETED, completed_at__lt=cutoff)
        | Q(status=OrderStatus.FAILED, failed_at__lt=cutoff)
        # A finished order that recorded no time of its end (a declined one): its last change says.
        | Q(status__in=FINISHED_STATUSES, completed_at__isnull=True, failed_at__isnull=True, updated_at__lt=cutoff)
    )


def _order_data(cutoff: datetime) -> QuerySet:
    detailed_steps = OrderStep.objects.filter(order=OuterRef("pk")).exclude(detail="")
    answered_tries = DeliveryAttempt.objects.filter(order=OuterRef("pk")).exclude(answer="")
    return orders_finished_before(cutoff).filter(
        Q(response__isnull=False)
        | Q(request__isnull=False)
        | ~Q(findings=[])
        | ~Q(loan_number="")
        | ~Q(last_error="")
        | ~Q(failure_reason="")
        | Exists(detailed_steps)
        | Exists(answered_tries)
    )


def order_data_plan(cutoff: datetime) -> int:
    return _order_data(cutoff).count()


def order_data_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_order_data(cutoff), size=batch_size):
        with transaction.atomic():
            # Locked and checked again: an order retried meanwhile is open, and left alone.
            ids = list(_order_data(cutoff).filter(pk__in=batch).select_for_update().values_list("pk", flat=True))
            OrderStep.objects.filter(order_id__in=ids).exclude(detail="").update(detail="")
            Delivery.objects.filter(order_id__in=ids).update(loan={}, result=None)
            DeliveryAttempt.objects.filter(order_id__in=ids).exclude(answer="").update(answer="")
            erased = Order.objects.filter(pk__in=ids).update(
                response=None, request=None, findings=[], loan_number="", last_error="", failure_reason=""
            )
        yield erased


def _documents(cutoff: datetime) -> QuerySet:
    return OrderDocument.objects.filter(order__in=orders_finished_before(cutoff)).filter(
        ~Q(file="") | ~Q(upload_location="") | ~Q(upload_authorization="")
    )


def documents_plan(cutoff: datetime) -> int:
    return _documents(cutoff).count()


def documents_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_documents(cutoff), size=batch_size):
        documents = list(_documents(cutoff).filter(pk__in=batch).only("pk", "file"))
        for document in documents:
            if document.file:
                document.file.storage.delete(document.file.name)  # a file already gone is no error
        yield OrderDocument.objects.filter(pk__in=[d.pk for d in documents]).update(
            file="", upload_location="", upload_authorization=""
        )


def _steps(cutoff: datetime) -> QuerySet:
    return OrderStep.objects.filter(order__in=orders_finished_before(cutoff))


def steps_plan(cutoff: datetime) -> int:
    return _steps(cutoff).count()


def steps_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_steps(cutoff), size=batch_size):
        deleted, _ = _steps(cutoff).filter(pk__in=batch).delete()
        yield deleted


# What the fulfillment purges, in the order the purge runs them (registered by
# FulfillmentConfig.ready()).
PURGES = [
    PurgeKind("order data", "RETENTION_ORDER_DATA_DAYS", ERASE, order_data_plan, order_data_purge),
    PurgeKind("documents", "RETENTION_DOCUMENT_DAYS", ERASE, documents_plan, documents_purge),
    PurgeKind("order steps", "RETENTION_STEP_DAYS", DELETE, steps_plan, steps_purge),
]
