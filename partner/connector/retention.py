"""What the connector keeps, and for how long (partner/core/retention.py).

- events (RETENTION_ORDER_DATA_DAYS, the order data's window: an `order.created` carries the loan
  data the lender sent): an event no longer waiting to be sent, of an order no longer open, made
  before the cut-off, is deleted with its attempts. The events feed serves what is left.
- idempotent answers: deleted once past their own window (CONNECTOR_IDEMPOTENCY_HOURS), with every
  purge that runs (an answer carries order data too).

Registered with the purge by the app's AppConfig.ready (partner/connector/apps.py).
"""

from collections.abc import Iterator
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from partner.connector.models import Event, EventState, IdempotentAnswer
from partner.core.retention import DELETE, PurgeKind, pk_batches
from partner.fulfillment.recovery.retention import orders_open


def events_before(cutoff: datetime) -> QuerySet:
    return (
        Event.objects.filter(created_at__lt=cutoff).exclude(state=EventState.PENDING).exclude(order__in=orders_open())
    )


def events_plan(cutoff: datetime) -> int:
    return events_before(cutoff).count()


def events_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(events_before(cutoff), size=batch_size):
        deleted, _ = events_before(cutoff).filter(pk__in=batch).delete()
        yield deleted


def _answers_before(cutoff: datetime) -> QuerySet:
    # The keys' own window, shorter than the purge's cut-off.
    kept = timedelta(hours=settings.CONNECTOR_IDEMPOTENCY_HOURS)
    return IdempotentAnswer.objects.filter(created_at__lt=timezone.now() - kept)


def answers_plan(cutoff: datetime) -> int:
    return _answers_before(cutoff).count()


def answers_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_answers_before(cutoff), size=batch_size):
        deleted, _ = IdempotentAnswer.objects.filter(pk__in=batch).delete()
        yield deleted


# What the connector purges, with the order data (registered by ConnectorConfig.ready()).
PURGES = [
    PurgeKind("connector events", "RETENTION_ORDER_DATA_DAYS", DELETE, events_plan, events_purge),
    PurgeKind("idempotent answers", "RETENTION_ORDER_DATA_DAYS", DELETE, answers_plan, answers_purge),
]
