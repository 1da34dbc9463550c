"""What the service emulator keeps, and for how long (partner/core/retention.py).

The sandbox's records of orders are copies of borrowers' loan data (a transaction's request holds
the loan, its response our delivery, its upload slots the PDF bytes), and all are demo data: after
RETENTION_SANDBOX_DAYS, counted from when each was created, they are deleted.

- sandbox transactions, with their response, its PATCHes, upload slots and events; never one whose
  order is open on our side (the fulfillment says which, through `transactions_open`: the sandbox
  imports no app);
- sandbox webhook deliveries (the exact bytes sent) with their attempts, unless still pending or
  about a transaction kept above;
- sandbox origins (an origin is valid for 300 s only), unless of a transaction kept above.

The host's lender instance, users, loans and the products are the emulated host's own records
(seeded demo data) and stay.

Registered with the purge by the app's AppConfig.ready (partner/sandbox/apps.py).
"""

from collections.abc import Iterator
from datetime import datetime

from django.db import transaction
from django.db.models import QuerySet

from partner.core.retention import DELETE, PurgeKind, pk_batches, transactions_open

from .models import Event, Origin, Transaction, WebhookDelivery


def _transactions(cutoff: datetime) -> QuerySet:
    return Transaction.objects.filter(created_at__lt=cutoff)


def _transactions_unprotected(ids: list[str]) -> list[str]:
    kept = transactions_open(ids)
    return [pk for pk in ids if pk not in kept]


def transactions_plan(cutoff: datetime) -> int:
    return sum(len(_transactions_unprotected(batch)) for batch in pk_batches(_transactions(cutoff)))


def transactions_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_transactions(cutoff), size=batch_size):
        ids = _transactions_unprotected(batch)
        if not ids:
            continue
        with transaction.atomic():
            Origin.objects.filter(transaction_id__in=ids).update(transaction=None)
            # The response, its PATCHes, slots (with their bytes) and events go in one DELETE each, unread.
            _, per_model = Transaction.objects.filter(pk__in=ids).delete()
        yield per_model.get(Transaction._meta.label, 0)


def _deliveries(cutoff: datetime) -> QuerySet:
    return WebhookDelivery.objects.filter(created_at__lt=cutoff).exclude(status=WebhookDelivery.Status.PENDING)


def _deliveries_unprotected(ids: list[int]) -> list[int]:
    """The deliveries of `ids` about no transaction with an open order (the resource is the
    transaction, or one of its events)."""
    rows = list(WebhookDelivery.objects.filter(pk__in=ids).values_list("pk", "resource_id"))
    resource_ids = {resource_id for _, resource_id in rows}
    event_transaction = dict(Event.objects.filter(pk__in=resource_ids).values_list("pk", "transaction_id"))
    transaction_of = {resource_id: event_transaction.get(resource_id, resource_id) for resource_id in resource_ids}
    kept = transactions_open(transaction_of.values())
    return [pk for pk, resource_id in rows if transaction_of[resource_id] not in kept]


def deliveries_plan(cutoff: datetime) -> int:
    return sum(len(_deliveries_unprotected(batch)) for batch in pk_batches(_deliveries(cutoff)))


def deliveries_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_deliveries(cutoff), size=batch_size):
        ids = _deliveries_unprotected(batch)
        if ids:
            _, per_model = _deliveries(cutoff).filter(pk__in=ids).delete()
            yield per_model.get(WebhookDelivery._meta.label, 0)


def _origins(cutoff: datetime) -> QuerySet:
    return Origin.objects.filter(generated_at__lt=cutoff)


def _origins_unprotected(ids: list[int]) -> list[int]:
    rows = list(Origin.objects.filter(pk__in=ids).values_list("pk", "transaction_id"))
    kept = transactions_open(transaction_id for _, transaction_id in rows if transaction_id)
    return [pk for pk, transaction_id in rows if transaction_id not in kept]


def origins_plan(cutoff: datetime) -> int:
    return sum(len(_origins_unprotected(batch)) for batch in pk_batches(_origins(cutoff)))


def origins_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_origins(cutoff), size=batch_size):
        ids = _origins_unprotected(batch)
        if ids:
            deleted, _ = _origins(cutoff).filter(pk__in=ids).delete()
            yield deleted


# What the sandbox purges (registered by SandboxConfig.ready()).
PURGES = [
    PurgeKind("sandbox transactions", "RETENTION_SANDBOX_DAYS", DELETE, transactions_plan, transactions_purge),
    PurgeKind("sandbox webhook deliveries", "RETENTION_SANDBOX_DAYS", DELETE, deliveries_plan, deliveries_purge),
    PurgeKind("sandbox origins", "RETENTION_SANDBOX_DAYS", DELETE, origins_plan, origins_purge),
]
