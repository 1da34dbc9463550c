"""A staff-worked order's events: acknowledged, its deliveries confirmed, staff told by e-mail.

The pipeline calls `acknowledgement_record` once its acknowledgement PATCH went out; the callback
handling calls `delivery_confirm` for each "processed" event of a staff-worked order; the periodic
`overdue_tell` e-mails staff of orders past their due time, once each. E-mails carry a reference and
a link, never borrowers' data.
"""

from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Max
from django.urls import reverse
from django.utils import timezone

from partner.catalog.selectors import product_get
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Tracker, TrackerStatus
from partner.fulfillment.services import step_record, tracker_complete

PARTNER_STATUS_MAX = 500


def response_version_next(tracker: Tracker) -> int:
    """The number our next PATCH of the transaction will be (the acknowledgement is 1)."""
    return (tracker.deliveries.aggregate(last=Max("sequence"))["last"] or 0) + 1


def acknowledgement_record(tracker: Tracker, *, response: dict, now) -> None:
    """The pipeline sent the acknowledgement: the order is with staff, and they are told."""
    sequence = response_version_next(tracker)
    Delivery.objects.create(
        tracker=tracker,
        kind=DeliveryKind.ACKNOWLEDGEMENT,
        state=DeliveryState.SENT,
        partner_status=str(response.get("partnerStatus", ""))[:PARTNER_STATUS_MAX],
        sequence=sequence,
        sent_at=now,
    )
    step_record(tracker, "acknowledged", str(response.get("partnerStatus", "")))
    transaction.on_commit(lambda: staff_tell(tracker, "New order"))


def delivery_confirm(tracker: Tracker, *, event_id: str, version=None) -> Delivery | None:
    """A "processed" callback: it confirms the delivery of its response version, or the latest sent
    one when it names none. The order completes when its final delivery is confirmed."""
    sent = tracker.deliveries.filter(state__in=[DeliveryState.SENT, DeliveryState.CONFIRMED]).exclude(sequence=None)
    delivery = None
    if isinstance(version, int) and not isinstance(version, bool):
        delivery = sent.filter(sequence=version).first()
    if delivery is None:
        delivery = sent.filter(state=DeliveryState.SENT).order_by("-sequence").first()
    if delivery is None:
        step_record(tracker, "event", f"processed ({event_id}), no delivery waiting for it")
        return None
    if delivery.state == DeliveryState.SENT:
        Delivery.objects.filter(pk=delivery.pk).update(state=DeliveryState.CONFIRMED, confirmed_at=timezone.now())
        step_record(tracker, "confirmed", f"{delivery.get_kind_display()} ({event_id})")
    if delivery.kind == DeliveryKind.FINAL:
        tracker_complete(transaction_id=tracker.transaction_id, event_id=event_id)
    return delivery


def due_at(product, start) -> object:
    hours = getattr(product, "turnaround_hours", None)
    return start + timedelta(hours=hours) if hours else None


def staff_tell(tracker: Tracker, what: str) -> bool:
    """E-mail the product's staff address about the order (no borrower data: a reference and a link)."""
    product = product_get(name=tracker.product_name)
    if product is None or not product.staff_email:
        return False
    link = settings.PUBLIC_BASE_URL.rstrip("/") + reverse("admin:fulfillment_stafforder_change", args=[tracker.pk])
    due = f"Due: {tracker.due_at:%Y-%m-%d %H:%M} UTC\n" if tracker.due_at else ""
    send_mail(
        subject=f"{what}: {product.listing_name or product.name} {tracker.reference_number}",
        message=f"{what}: {tracker.reference_number} ({product.listing_name or product.name}).\n{due}{link}\n",
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[product.staff_email],
    )
    return True


def overdue_tell() -> int:
    """Tell staff of every order past its due time, once each; how many."""
    told = 0
    now = timezone.now()
    overdue = Tracker.objects.filter(
        status=TrackerStatus.WITH_STAFF, due_at__lt=now, overdue_notified_at__isnull=True
    ).order_by("due_at")
    for tracker in overdue[:500]:
        if Tracker.objects.filter(pk=tracker.pk, overdue_notified_at__isnull=True).update(overdue_notified_at=now):
            staff_tell(tracker, "Order past due")
            step_record(tracker, "overdue", f"due {tracker.due_at:%Y-%m-%d %H:%M} UTC")
            told += 1
    return told
