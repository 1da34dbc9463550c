"""Reads of orders: the status endpoint, the UI's view of a transaction, the sweep's stalled orders,
`order_show`."""

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from partner.core.leases import lease_free, stalled_before
from partner.fulfillment.models import ACTIVE_STATUSES, Delivery, DeliveryState, Order, OrderStatus

# What the lender sees, step by step.
UI_STEPS = {
    OrderStatus.VALIDATION_REQUESTED: "requested",
    OrderStatus.IN_PROGRESS: "in_progress",
    OrderStatus.WITH_STAFF: "in_progress",
    OrderStatus.RESPONSE_DELIVERED: "delivered",
    OrderStatus.REQUEST_COMPLETED: "completed",
    OrderStatus.FAILED: "failed",
    OrderStatus.DECLINED: "declined",
}


def order_get(*, transaction_id: str) -> Order | None:
    return Order.objects.filter(transaction_id=transaction_id).first()


def order_view(transaction_id: str) -> dict | None:
    order = order_get(transaction_id=transaction_id)
    if order is None:
        return None
    attachments = order.attachments.only("order_id", "name", "mime_type", "resource_id", "uploaded_at")
    return {
        "transaction_id": order.transaction_id,
        "status": order.status,
        "step": UI_STEPS[order.status],
        "reason": order.failure_reason,
        "reference_number": order.reference_number,
        "partner_status": (order.response or {}).get("partnerStatus", ""),
        "attachments": [
            {"name": a.name, "mime_type": a.mime_type, "resource_id": a.resource_id}
            for a in attachments
            if a.uploaded_at is not None
        ],
        "updated_at": order.updated_at.isoformat(),
    }


def orders_shown(transaction_ids) -> dict[str, dict]:
    """What an operator asks of orders (`manage.py order_show`): each one's status, failure code and
    deliveries (kind, state, sequence) in the order made, by transaction id; no borrower's data."""
    found = {}
    for order in Order.objects.filter(transaction_id__in=transaction_ids).prefetch_related("deliveries"):
        deliveries = sorted(order.deliveries.all(), key=lambda delivery: delivery.pk)
        found[order.transaction_id] = {
            "id": order.pk,
            "status": order.status,
            "failure_code": order.failure_code,
            "deliveries": [{"kind": d.kind, "state": d.state, "sequence": d.sequence} for d in deliveries],
        }
    return found


def work_left() -> Q:
    """Orders with work left for a run: not yet prepared, or with a delivery waiting to be sent."""
    waiting = Delivery.objects.filter(order=OuterRef("pk"), state=DeliveryState.PENDING)
    return Q(status__in=ACTIVE_STATUSES, prepared_at__isnull=True) | Q(Exists(waiting))


def orders_stalled():
    """Orders with work left that no worker holds and no retry is due for, untouched for
    STALL_SECONDS: their task was lost."""
    now = timezone.now()
    stalled = stalled_before()
    waiting = Delivery.objects.filter(order=OuterRef("pk"), state=DeliveryState.PENDING, updated_at__lt=stalled)
    return Order.objects.filter(
        Q(status__in=ACTIVE_STATUSES, prepared_at__isnull=True, updated_at__lt=stalled) | Q(Exists(waiting)),
        lease_free(now),
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lt=stalled),
    )


def orders_awaiting_confirmation():
    """Delivered orders whose "processed" callback has not come within CONFIRMATION_WAIT_SECONDS."""
    waited = timezone.now() - timedelta(seconds=settings.CONFIRMATION_WAIT_SECONDS)
    return Order.objects.filter(status=OrderStatus.RESPONSE_DELIVERED, delivered_at__lt=waited)


def confirmation_health_warnings() -> list[str]:
    """For /healthz: delivered orders the service has not confirmed."""
    count = orders_awaiting_confirmation().count()
    if not count:
        return []
    return [f"{count} delivered order(s) await the service's confirmation (see the orders' admin)"]
