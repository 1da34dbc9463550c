"""The inbox's outbox: stored notifications handed to the broker by a relay, never by the request.

`notifications_relay` (a loop in every Celery worker, see `relay.py`) takes committed
`received` rows in batches and publishes one processing task per row, by task name, then
marks them `queued`. Everything that wants a notification processed (again) puts it back to
`received` and lets the relay publish it: the sweep for rows whose message was lost, and the
admin's replay. So this is the one place that publishes the inbox's task.
"""

import logging

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from partner.core.enqueue import rows_relay
from partner.core.leases import lease_free, leases_expired_free, stalled_before
from partner.inbox.models import Notification, NotificationState

logger = logging.getLogger(__name__)

PROCESS_TASK = "inbox.process"
SWEEP_TASK = "inbox.sweep"


def _received_taken(limit: int) -> list[int]:
    """Mark up to `limit` `received` rows `queued`, oldest first, and return their ids: one statement
    (UPDATE … RETURNING), the rows locked until the caller's transaction ends. Relays in several
    workers skip each other's rows (SKIP LOCKED) where the database has it; SQLite has one writer."""
    connection = transaction.get_connection()
    table = connection.ops.quote_name(Notification._meta.db_table)
    lock = " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            # The table is the model's, quoted; every value is a parameter.
            f"UPDATE {table} SET state = %s, enqueued_at = %s, updated_at = %s WHERE id IN "  # noqa: S608
            f"(SELECT id FROM {table} WHERE state = %s ORDER BY id LIMIT %s{lock}) RETURNING id",
            [NotificationState.QUEUED, now, now, NotificationState.RECEIVED, limit],
        )
        return sorted(row[0] for row in cursor.fetchall())


def notifications_relay(*, limit: int = 200) -> int:
    """Hand up to `limit` stored `received` notifications to the broker, oldest first; how many went.

    The relay's shape (`partner.core.enqueue.rows_relay`): the rows are marked `queued` and locked
    in one statement, their tasks published as one batch, and the transaction committed (SKIP
    LOCKED: relays in several workers share the work without waiting on each other). When the
    broker takes nothing, the rows wait `received` for the next round; a second message for a
    notification is harmless.
    """

    def take() -> list[dict]:
        return [{"notification_id": notification_id} for notification_id in _received_taken(limit)]

    return rows_relay(PROCESS_TASK, take, what="notification(s)")


def notifications_stalled():
    """Notifications whose message was lost: queued and untouched for STALL_SECONDS, or taken by a
    worker whose lease ran out (the worker died)."""
    now = timezone.now()
    return Notification.objects.filter(
        Q(state=NotificationState.QUEUED, updated_at__lt=stalled_before())
        | (Q(state=NotificationState.PROCESSING) & lease_free(now))
    )


def notifications_left_hand_back() -> int:
    """Put the notifications whose worker died processing them back to `received` (the relay hands
    them over on its next round); how many."""
    processing = Notification.objects.filter(state=NotificationState.PROCESSING)
    return len(leases_expired_free(processing, state=NotificationState.RECEIVED, updated_at=timezone.now()))


def notifications_sweep(*, limit: int = 500) -> int:
    """Put stalled notifications back to `received` and relay what waits (when no relay runs, or it
    fell behind, or a message was lost). Returns how many were handed to the broker."""
    ids = list(notifications_stalled().order_by("pk").values_list("pk", flat=True)[:limit])
    if ids:
        Notification.objects.filter(pk__in=ids).update(state=NotificationState.RECEIVED, updated_at=timezone.now())
    relayed = notifications_relay(limit=limit + len(ids))
    if relayed or ids:
        logger.info("inbox sweep: %d stalled put back; %d handed to the broker", len(ids), relayed)
    return relayed


def notification_replay(*, notification_id: int) -> bool:
    """Admin action: process a notification again, whatever happened to it before.

    Put back to `received`; the relay hands it to the broker within INBOX_RELAY_INTERVAL (the
    sweep, when no relay runs). False when there is no such notification, or it was refused (a
    notification signed with another product's secret is never processed).
    """
    return (
        Notification.objects.filter(pk=notification_id)
        .exclude(state=NotificationState.REFUSED)
        .update(state=NotificationState.RECEIVED, last_error="", updated_at=timezone.now())
        > 0
    )
