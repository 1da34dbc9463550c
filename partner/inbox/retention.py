"""What the inbox keeps of a notification, and for how long (partner/core/retention.py).

A notification is finished once processed, ignored, failed or refused; one still received, queued
or processing is left alone, and so is every notification of an open order (its transaction's, or
an event of it), whatever its age.

- notification bodies (RETENTION_NOTIFICATION_BODY_DAYS, counted from when it was processed, or
  received when it never was): the raw body, the request headers and the sender's address are
  erased. The rest of the row stays: its `dedupe_key` still answers a late redelivery of the same
  notification with 202 and no second processing, and a replay needs only the ids it keeps.
- notifications (RETENTION_NOTIFICATION_DAYS, counted the same way): the rows themselves are
  deleted, long after the service stops redelivering. A copy arriving even later would only find
  its order, which stays for good, and do nothing.
- refused notifications (RETENTION_REFUSED_NOTIFICATION_DAYS, counted from when they came): the
  evidence of a webhook signed with one product's secret but naming another (headers, an excerpt,
  the digest) is deleted after days, not kept as long as real notifications; never processed, it
  belongs to no order.

Registered with the purge by the app's AppConfig.ready (partner/inbox/apps.py).
"""

from collections.abc import Iterator
from datetime import datetime

from django.db.models import Exists, OuterRef, Q, QuerySet, Value
from django.db.models.functions import Concat, StrIndex

from partner.core.retention import DELETE, ERASE, PurgeKind, pk_batches
from partner.fulfillment.recovery.retention import orders_open
from partner.inbox.models import Notification, NotificationState

FINISHED_STATES = (
    NotificationState.PROCESSED,
    NotificationState.IGNORED,
    NotificationState.FAILED,
    NotificationState.REFUSED,
)


def _of_open_order() -> Exists:
    """The notification names a transaction with an open order: as its resource (a transaction
    notification) or in its reference (`.../transactions/<id>/events/<event id>`, the callback)."""
    marker = Concat(Value("/transactions/"), "transaction_id", Value("/"))
    in_ref = StrIndex(OuterRef("resource_ref"), marker)
    return Exists(
        orders_open().annotate(in_ref=in_ref).filter(Q(transaction_id=OuterRef("resource_id")) | Q(in_ref__gt=0))
    )


def notifications_finished_before(cutoff: datetime) -> QuerySet:
    return (
        Notification.objects.filter(state__in=FINISHED_STATES, received_at__lt=cutoff)
        .filter(Q(processed_at__lt=cutoff) | Q(processed_at__isnull=True))
        .exclude(_of_open_order())
    )


def _bodies(cutoff: datetime) -> QuerySet:
    return notifications_finished_before(cutoff).filter(~Q(body="") | ~Q(headers={}) | Q(remote_addr__isnull=False))


def bodies_plan(cutoff: datetime) -> int:
    return _bodies(cutoff).count()


def bodies_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_bodies(cutoff), size=batch_size):
        # The conditions again in the UPDATE: a notification replayed meanwhile is not finished.
        yield _bodies(cutoff).filter(pk__in=batch).update(body="", headers={}, remote_addr=None)


def notifications_plan(cutoff: datetime) -> int:
    return notifications_finished_before(cutoff).count()


def notifications_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(notifications_finished_before(cutoff), size=batch_size):
        deleted, _ = notifications_finished_before(cutoff).filter(pk__in=batch).delete()
        yield deleted


def _refused(cutoff: datetime) -> QuerySet:
    return Notification.objects.filter(state=NotificationState.REFUSED, received_at__lt=cutoff)


def refused_plan(cutoff: datetime) -> int:
    return _refused(cutoff).count()


def refused_purge(cutoff: datetime, batch_size: int) -> Iterator[int]:
    for batch in pk_batches(_refused(cutoff), size=batch_size):
        deleted, _ = _refused(cutoff).filter(pk__in=batch).delete()
        yield deleted


# What the inbox purges, in the order the purge runs them: the bodies before the rows, so a
# notification past both windows is erased, then deleted (registered by InboxConfig.ready()).
PURGES = [
    PurgeKind("refused notifications", "RETENTION_REFUSED_NOTIFICATION_DAYS", DELETE, refused_plan, refused_purge),
    PurgeKind("notification bodies", "RETENTION_NOTIFICATION_BODY_DAYS", ERASE, bodies_plan, bodies_purge),
    PurgeKind("notifications", "RETENTION_NOTIFICATION_DAYS", DELETE, notifications_plan, notifications_purge),
]
