"""Webhook intake: verify, store, enqueue after commit; then dispatch each notification once.

`webhook_receive` is called by the view with the raw bytes. It verifies the
signature before parsing anything, stores the notification (a duplicate
delivery hits the unique key and is only counted), and enqueues processing
once the row is committed. If the broker is down the row stays `received` and
`notifications_sweep` enqueues it later: nothing accepted is lost.

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
                # Queued at once: the enqueue right after commit nearly always works, and
                # marking the rare failure is cheaper than marking every success.
                state=NotificationState.QUEUED if handled else NotificationState.IGNORED,
            )
    except IntegrityError:
        # The same notification again (or two copies at once): count it, process it once.
        Notification.objects.filter(dedupe_key=parsed.dedupe_key).update(duplicates=F("duplicates") + 1)
        existing = Notification.objects.only("pk").get(dedupe_key=parsed.dedupe_key)
        return Receipt(notification_id=existing.pk, duplicate=True)

    if handled:
        transaction.on_commit(lambda: notification_enqueue(notification_id=notification.pk))
    else:
        logger.info("ignored notification %s: %s %s", notification.pk, parsed.resource_type, parsed.event_type)
    return Receipt(notification_id=notification.pk, duplicate=False)


def notification_enqueue(*, notification_id: int) -> bool:
    """Hand a stored notification to the broker; when the broker is down the sweeper retries later."""
    from partner.inbox.tasks import process_notification

    try:
        process_notification.apply_async(kwargs={"notification_id": notification_id})
    except Exception as exc:  # kombu/redis raise several types; the row is safe either way
        logger.warning(
            "broker unavailable, notification %s left for the sweeper (%s)", notification_id, type(exc).__name__
        )
        Notification.objects.filter(pk=notification_id, state=NotificationState.QUEUED).update(
            state=NotificationState.RECEIVED, updated_at=timezone.now()
        )
        return False
    return True


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
    """Enqueue notifications the broker never took, or whose message or processing was lost."""
    now = timezone.now()
    settled = now - timedelta(seconds=5)  # leave the receiving request time to enqueue
    stalled = now - timedelta(seconds=settings.INBOX_STALL_SECONDS)
    ids = list(
        Notification.objects.filter(
            Q(state=NotificationState.RECEIVED, updated_at__lt=settled)
            | Q(state__in=[NotificationState.QUEUED, NotificationState.PROCESSING], updated_at__lt=stalled)
        )
        .order_by("received_at")
        .values_list("pk", flat=True)[:limit]
    )
    sent = 0
    for notification_id in ids:
        # Mark it queued first (a failed enqueue puts it back to received), and touch
        # the row so the next sweep leaves it alone while it waits in the queue.
        Notification.objects.filter(pk=notification_id).exclude(state=NotificationState.PROCESSED).update(
            state=NotificationState.QUEUED, enqueued_at=timezone.now(), updated_at=timezone.now()
        )
        sent += notification_enqueue(notification_id=notification_id)
    if ids:
        logger.info("inbox sweep: %d notification(s) waiting, %d enqueued", len(ids), sent)
    return sent


def notification_replay(*, notification: Notification) -> bool:
    """Admin action: process a notification again, whatever happened to it before."""
    Notification.objects.filter(pk=notification.pk).update(state=NotificationState.QUEUED, updated_at=timezone.now())
    return notification_enqueue(notification_id=notification.pk)
