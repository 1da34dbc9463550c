"""Webhook intake: verify and store; relay the stored rows to the broker; dispatch each once.

`webhook_receive` is called by the view with the raw bytes. It verifies the
signature before parsing anything and stores the notification as `received`
(a duplicate delivery hits the unique key and is only counted). That single
INSERT is all the request does: the broker is not on the webhook's path, so a
broker outage never slows or fails an answer, and what was answered 202 is
committed.

`notifications_relay` (the outbox relay: a loop in every Celery worker, see
`partner/inbox/relay.py`) hands committed `received` rows to the broker in
batches and marks them `queued`. `notifications_sweep` (periodic) also
enqueues again what was queued or taken by a worker and then stalled.

`notification_process` runs in a worker: it claims the row, calls the handler
for its resource and event type, and records the outcome.
"""

import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from partner.catalog.selectors import signing_secrets_all
from partner.fulfillment.services import tracker_event_handle, tracker_open
from partner.fulfillment.tasks import fulfil_enqueue
from partner.inbox.models import Notification, NotificationState
from partner.inbox.notifications import NotANotification, notification_parse
from partner.platform.errors import ServiceError
from partner.platform.formats import WEBHOOK_EVENT_CREATED
from partner.platform.signatures import signature_verify
from partner.platform.urns import event_resource_type, transaction_resource_type

logger = logging.getLogger(__name__)

# Headers never stored: they carry credentials, or the signature itself.
_UNSTORED_HEADERS = {"authorization", "cookie", "proxy-authorization", "x-svc-pat"}


class WebhookSignatureInvalid(Exception):
    """The signature header is missing or does not match any accepted secret."""


class WebhookNotANotification(Exception):
    """Signed correctly, but not a webhook notification."""


@dataclass(frozen=True)
class Receipt:
    notification_id: int
    duplicate: bool


# Product secrets are read from the database at most once per this many seconds
# per process: a webhook must not cost a query for them.
_SECRETS_TTL = 30.0
_secrets_cache: tuple[float, tuple[str, ...]] = (0.0, ())


def signing_secrets() -> tuple[str, ...]:
    global _secrets_cache
    now = time.monotonic()
    fetched_at, secrets = _secrets_cache
    if now - fetched_at > _SECRETS_TTL or not secrets:
        secrets = tuple(dict.fromkeys([*settings.SVC_SIGNING_SECRETS, *signing_secrets_all()]))
        _secrets_cache = (now, secrets)
    return secrets


def signing_secrets_forget() -> None:
    """Drop the cached secrets (after a product's secret changed)."""
    global _secrets_cache
    _secrets_cache = (0.0, ())


def headers_storable(headers) -> dict:
    signature_header = settings.SVC_SIGNATURE_HEADER.lower()
    pat_header = settings.SVC_PAT_HEADER.lower()
    return {
        name: value[:500]
        for name, value in headers.items()
        if name.lower() not in _UNSTORED_HEADERS and name.lower() not in (signature_header, pat_header)
    }


def notification_handled(resource_type: str, event_type: str) -> bool:
    return (resource_type, event_type) in {
        (transaction_resource_type(), WEBHOOK_EVENT_CREATED),
        (event_resource_type(), WEBHOOK_EVENT_CREATED),
    }


def _single_insert():
    """The transaction around the one INSERT of a notification.

    In autocommit mode (a request: the view is non-atomic) a single INSERT is
    atomic and committed when it returns, so no BEGIN/COMMIT round trips are
    spent on it (the profile of the intake showed them). Inside a caller's
    transaction a savepoint keeps a duplicate key from spoiling that transaction.
    """
    if transaction.get_connection().in_atomic_block:
        return transaction.atomic()
    return contextlib.nullcontext()


def webhook_receive(*, body: bytes, signature: str | None, headers, remote_addr: str | None) -> Receipt:
    if not signature_verify(body, signature, signing_secrets()):
        # A product secret changed in the last seconds? Read them again once before refusing.
        signing_secrets_forget()
        if not signature_verify(body, signature, signing_secrets()):
            raise WebhookSignatureInvalid
    try:
        parsed = notification_parse(body)
    except NotANotification as exc:
        raise WebhookNotANotification(str(exc)) from None

    handled = notification_handled(parsed.resource_type, parsed.event_type)
    try:
        with _single_insert():
            notification = Notification.objects.create(
                dedupe_key=parsed.dedupe_key,
                event_id=parsed.event_id,
                resource_type=parsed.resource_type,
                resource_id=parsed.resource_id,
                event_type=parsed.event_type,
                event_time=parsed.event_time,
                instance_id=parsed.instance_id,
                resource_ref=parsed.resource_ref,
                body=body.decode("utf-8"),
                headers=headers_storable(headers),
                remote_addr=remote_addr,
                # `received` waits for the relay; nothing else happens in the request.
                state=NotificationState.RECEIVED if handled else NotificationState.IGNORED,
            )
    except IntegrityError:
        # The same notification again (or two copies at once): count it, process it once.
        Notification.objects.filter(dedupe_key=parsed.dedupe_key).update(duplicates=F("duplicates") + 1)
        existing = Notification.objects.only("pk").get(dedupe_key=parsed.dedupe_key)
        return Receipt(notification_id=existing.pk, duplicate=True)

    if not handled:
        logger.info("ignored notification %s: %s %s", notification.pk, parsed.resource_type, parsed.event_type)
    return Receipt(notification_id=notification.pk, duplicate=False)


def _publish(notification_ids: list[int]) -> list[int]:
    """Send one processing task per id, as one batch where the transport can (a Redis pipeline);
    returns the ids sent: all of them, or none when the broker failed (a message that went out
    anyway is sent again later, which is harmless: `_claim` lets one through)."""
    from partner.inbox.tasks import process_notification

    try:
        with (
            process_notification.app.producer_or_acquire() as producer,
            producer.batch(max_size=max(1, len(notification_ids))),
        ):
            for notification_id in notification_ids:
                process_notification.apply_async(kwargs={"notification_id": notification_id}, producer=producer)
    except Exception as exc:  # kombu/redis raise several types; the rows stay for the next round
        logger.warning(
            "broker unavailable: %d notification(s) left waiting (%s)", len(notification_ids), type(exc).__name__
        )
        return []
    return list(notification_ids)


def notifications_relay(*, limit: int = 200) -> int:
    """Hand up to `limit` stored `received` notifications to the broker, oldest first; how many went.

    The rows are locked while their tasks are published (SKIP LOCKED: relays in
    several workers share the work without waiting on each other) and marked
    `queued` in the same transaction. A relay that dies after publishing and
    before committing leaves them `received`, and they are published again:
    a second message for a notification is harmless, `_claim` lets one through.
    """
    with transaction.atomic():
        ids = list(
            Notification.objects.select_for_update(skip_locked=True)
            .filter(state=NotificationState.RECEIVED)
            .order_by("pk")
            .values_list("pk", flat=True)[:limit]
        )
        if not ids:
            return 0
        sent = _publish(ids)
        now = timezone.now()
        Notification.objects.filter(pk__in=sent, state=NotificationState.RECEIVED).update(
            state=NotificationState.QUEUED, enqueued_at=now, updated_at=now
        )
    return len(sent)


def notification_enqueue(*, notification_id: int) -> bool:
    """Hand one notification to the broker now; False when the broker refused it.

    Marked `queued` before the publish (a worker may claim it the moment it is
    sent); put back to `received` for the relay when the broker refuses it.
    """
    now = timezone.now()
    Notification.objects.filter(pk=notification_id).update(
        state=NotificationState.QUEUED, enqueued_at=now, updated_at=now
    )
    if _publish([notification_id]):
        return True
    Notification.objects.filter(pk=notification_id, state=NotificationState.QUEUED).update(
        state=NotificationState.RECEIVED, updated_at=timezone.now()
    )
    return False


def _claim(notification_id: int) -> Notification | None:
    now = timezone.now()
    stalled = now - timedelta(seconds=settings.INBOX_STALL_SECONDS)
    claimed = Notification.objects.filter(
        Q(state__in=[NotificationState.RECEIVED, NotificationState.QUEUED])
        | Q(state=NotificationState.PROCESSING, updated_at__lt=stalled),
        pk=notification_id,
    ).update(state=NotificationState.PROCESSING, attempts=F("attempts") + 1, updated_at=now)
    return Notification.objects.get(pk=notification_id) if claimed else None


def _finish(notification: Notification, state: str, error: str = "") -> None:
    now = timezone.now()
    Notification.objects.filter(pk=notification.pk).update(
        state=state, last_error=error[:2000], processed_at=now, updated_at=now
    )


def notification_process(*, notification_id: int) -> str | None:
    """Handle one notification. Transient service errors propagate so the task retries them."""
    notification = _claim(notification_id)
    if notification is None:
        return None  # processed already, or another worker has it
    if not notification_handled(notification.resource_type, notification.event_type):
        _finish(notification, NotificationState.IGNORED)  # an ignored notification replayed from the admin
        return NotificationState.IGNORED
    try:
        if notification.resource_type == transaction_resource_type():
            tracker, _ = tracker_open(
                transaction_id=notification.resource_id,
                resource_ref=notification.resource_ref,
                product_name=notification.instance_id,
            )
            fulfil_enqueue(tracker.pk)
        else:
            tracker_event_handle(resource_ref=notification.resource_ref)
    except ServiceError as exc:
        if exc.transient:
            Notification.objects.filter(pk=notification.pk).update(
                state=NotificationState.QUEUED, last_error=str(exc)[:2000], updated_at=timezone.now()
            )
            raise
        _finish(notification, NotificationState.FAILED, str(exc))
        return NotificationState.FAILED
    except Exception as exc:
        _finish(notification, NotificationState.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    _finish(notification, NotificationState.PROCESSED)
    return NotificationState.PROCESSED


def notifications_sweep(*, limit: int = 500) -> int:
    """Enqueue what is waiting: `received` rows (when no relay runs, or it fell behind) and
    notifications whose message or processing was lost (queued or processing, untouched
    for INBOX_STALL_SECONDS). Returns how many were enqueued."""
    stalled = timezone.now() - timedelta(seconds=settings.INBOX_STALL_SECONDS)
    relayed = notifications_relay(limit=limit)
    ids = list(
        Notification.objects.filter(
            state__in=[NotificationState.QUEUED, NotificationState.PROCESSING], updated_at__lt=stalled
        )
        .order_by("received_at")
        .values_list("pk", flat=True)[:limit]
    )
    # Touched when enqueued again, so the next sweep leaves them alone while they wait in the queue.
    again = sum(notification_enqueue(notification_id=notification_id) for notification_id in ids)
    if relayed or ids:
        logger.info("inbox sweep: %d received enqueued; %d of %d stalled enqueued again", relayed, again, len(ids))
    return relayed + again


def notification_replay(*, notification: Notification) -> bool:
    """Admin action: process a notification again, whatever happened to it before."""
    return notification_enqueue(notification_id=notification.pk)
