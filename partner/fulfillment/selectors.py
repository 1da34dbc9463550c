"""Reads of trackers: the status endpoint and the UI's view of a transaction."""

from partner.fulfillment.models import Tracker, TrackerStatus

# What the lender sees, step by step.
UI_STEPS = {
    TrackerStatus.VALIDATION_REQUESTED: "requested",
    TrackerStatus.IN_PROGRESS: "in_progress",
    TrackerStatus.RESPONSE_DELIVERED: "delivered",
    TrackerStatus.REQUEST_COMPLETED: "completed",
    TrackerStatus.FAILED: "failed",
}


def tracker_get(*, transaction_id: str) -> Tracker | None:
    return Tracker.objects.filter(transaction_id=transaction_id).first()


def tracker_view(transaction_id: str) -> dict | None:
    tracker = tracker_get(transaction_id=transaction_id)
    if tracker is None:
        return None
    attachments = tracker.attachments.only("name", "mime_type", "resource_id", "uploaded_at")
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
