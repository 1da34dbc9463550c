"""Worker-side processing of a notification: take it, call its handler, record the outcome.

One table says what we do with a notification: (resource type, event type) -> a handler that
the fulfillment app provides. A pair that is not in the table is ignored, here and nowhere
else: the intake stores such a notification as `ignored`, and a replayed one is finished as
`ignored` without calling anything.

A worker takes a notification with a lease (`partner.core.leases`), so two messages for one
notification (a duplicate publish, a replay) are processed once.
"""

import functools
import logging
from collections.abc import Callable

from django.db.models import F
from django.utils import timezone

from partner.core.leases import Lease, lease_give_back, lease_kept, lease_take_one
from partner.core.logging import log_context
from partner.core.outbound import kept
from partner.core.retries import outage_of, outage_reason
from partner.fulfillment import handlers
from partner.inbox.models import Notification, NotificationState
from partner.platform.errors import RequestRefused, ServiceError
from partner.platform.formats import WEBHOOK_EVENT_CREATED
from partner.platform.urns import event_resource_type, transaction_resource_type

logger = logging.getLogger(__name__)

# A handler takes the notification's resource id, resource reference and product name.
Handler = Callable[..., object]


@functools.cache
def handler_table(transaction_type: str, event_type: str) -> dict[tuple[str, str], Handler]:
    """(resource type, event type) -> handler, for the resource types of the URN settings (built once
    per pair: every webhook asks)."""
    return {
        (transaction_type, WEBHOOK_EVENT_CREATED): handlers.transaction_created,
        (event_type, WEBHOOK_EVENT_CREATED): handlers.event_created,
    }


def handler_for(resource_type: str, event_type: str) -> Handler | None:
    """The handler of a notification, or None when we ignore it."""
    return handler_table(transaction_resource_type(), event_resource_type()).get((resource_type, event_type))


def _take(notification_id: int) -> tuple[Notification, Lease] | None:
    return lease_take_one(
        Notification.objects.filter(
            pk=notification_id,
            state__in=[NotificationState.RECEIVED, NotificationState.QUEUED, NotificationState.PROCESSING],
        ),
        state=NotificationState.PROCESSING,
        attempts=F("attempts") + 1,
        updated_at=timezone.now(),
    )


def _finish(lease: Lease, state: str, error: str = "") -> None:
    now = timezone.now()
    lease.release(
        state=state,
        last_error=kept(error),
        processed_at=now,
        updated_at=now,
    )


def notification_process(*, notification_id: int) -> str | None:
    """Handle one notification; its final state, or None when another worker has it or it is done.

    Transient service errors, and one of our own services away (`outage_of`: the database, the
    cache, the broker), propagate so that the task retries them; the notification waits `queued`
    meanwhile (or, when the database is away, its lease runs out and it is handed back).
    """
    taken = _take(notification_id)
    if taken is None:
        return None
    notification, lease = taken
    handler = handler_for(notification.resource_type, notification.event_type)
    if handler is None:
        _finish(lease, NotificationState.IGNORED)  # an ignored notification replayed from the admin
        return NotificationState.IGNORED
    txn_id = notification.resource_id if notification.resource_type == transaction_resource_type() else None
    try:
        with (
            log_context(notification_id=notification.pk, transaction_id=txn_id),
            lease_kept(lease),
        ):
            handler(
                resource_id=notification.resource_id,
                resource_ref=notification.resource_ref,
                product_name=notification.product_name,
            )
    except ServiceError as exc:
        if exc.transient:
            lease.release(
                state=NotificationState.QUEUED,
                last_error=kept(exc),
                updated_at=timezone.now(),
            )
            raise
        _finish(lease, NotificationState.FAILED, str(exc))
        return NotificationState.FAILED
    except RequestRefused as exc:  # nothing reached the service, and the same request is refused every time
        _finish(lease, NotificationState.FAILED, str(exc))
        return NotificationState.FAILED
    except Exception as exc:
        away = outage_of(exc)
        if away is not None:  # not the notification's fault: it waits for our service to come back
            lease_give_back(
                lease,
                state=NotificationState.QUEUED,
                last_error=kept(outage_reason(away, exc)),
                updated_at=timezone.now(),
            )
            raise
        _finish(lease, NotificationState.FAILED, f"{type(exc).__name__}: {exc}")
        raise
    _finish(lease, NotificationState.PROCESSED)
    return NotificationState.PROCESSED
