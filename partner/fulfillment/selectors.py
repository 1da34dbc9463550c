"""Reads of trackers: the status endpoint, the UI's view of a transaction, the sweep's stalled trackers."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from partner.core.leases import lease_free, lease_remaining, stalled_before
from partner.fulfillment.models import ACTIVE_STATUSES, Delivery, DeliveryState, Tracker, TrackerStatus

# What the lender sees, step by step.
UI_STEPS = {
    TrackerStatus.VALIDATION_REQUESTED: "requested",
    TrackerStatus.IN_PROGRESS: "in_progress",
    TrackerStatus.WITH_STAFF: "in_progress",
    TrackerStatus.RESPONSE_DELIVERED: "delivered",
    TrackerStatus.REQUEST_COMPLETED: "completed",
    TrackerStatus.FAILED: "failed",
    TrackerStatus.DECLINED: "declined",
}


def tracker_get(*, transaction_id: str) -> Tracker | None:
    return Tracker.objects.filter(transaction_id=transaction_id).first()


def tracker_view(transaction_id: str) -> dict | None:
    tracker = tracker_get(transaction_id=transaction_id)
    if tracker is None:
        return None
    attachments = tracker.attachments.only("tracker_id", "name", "mime_type", "resource_id", "uploaded_at")
    return {
        "transaction_id": tracker.transaction_id,
        "status": tracker.status,
        "step": UI_STEPS[tracker.status],
        "reason": tracker.failure_reason,
        "reference_number": tracker.reference_number,
        "partner_status": (tracker.response or {}).get("partnerStatus", ""),
        "attachments": [
            {"name": a.name, "mime_type": a.mime_type, "resource_id": a.resource_id}
            for a in attachments
            if a.uploaded_at is not None
        ],
        "updated_at": tracker.updated_at.isoformat(),
    }


def trackers_stalled():
    """Active trackers no worker holds and no retry is due for, untouched for STALL_SECONDS: their
    task was lost."""
    now = timezone.now()
    stalled = stalled_before()
    return Tracker.objects.filter(
        lease_free(now),
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lt=stalled),
        status__in=ACTIVE_STATUSES,
        updated_at__lt=stalled,
    )


def deliveries_stalled():
    """Staff deliveries waiting to be sent for STALL_SECONDS with no worker holding their order."""
    stalled = stalled_before()
    return Delivery.objects.filter(
        lease_free(timezone.now(), through="tracker__"),
        state=DeliveryState.PENDING,
        updated_at__lt=stalled,
        tracker__status=TrackerStatus.WITH_STAFF,
    )


def trackers_awaiting_confirmation():
    """Delivered orders whose "processed" callback has not come within CONFIRMATION_WAIT_SECONDS."""
    waited = timezone.now() - timedelta(seconds=settings.CONFIRMATION_WAIT_SECONDS)
    return Tracker.objects.filter(status=TrackerStatus.RESPONSE_DELIVERED, delivered_at__lt=waited)


def confirmation_health_warnings() -> list[str]:
    """For /healthz: delivered orders the service has not confirmed."""
    count = trackers_awaiting_confirmation().count()
    if not count:
        return []
    return [f"{count} delivered order(s) await the service's confirmation (see the trackers' admin)"]


def tracker_held_for(tracker_id: int) -> float:
    """Seconds until another worker's lease on an active tracker runs out (0: free, or finished)."""
    return lease_remaining(Tracker.objects.filter(pk=tracker_id, status__in=ACTIVE_STATUSES))
