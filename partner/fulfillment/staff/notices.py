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
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus
from partner.fulfillment.orders.services import order_complete, step_record

PARTNER_STATUS_MAX = 500


def response_version_next(order: Order) -> int:
    """The number our next PATCH of the transaction will be (the acknowledgement is 1)."""
    return (order.deliveries.aggregate(last=Max("sequence"))["last"] or 0) + 1


def acknowledgement_record(order: Order, *, response: dict, now) -> None:
    """The pipeline sent the acknowledgement: the order is with staff, and they are told."""
    sequence = response_version_next(order)
    Delivery.objects.create(
        order=order,
        kind=DeliveryKind.ACKNOWLEDGEMENT,
        state=DeliveryState.SENT,
        partner_status=str(response.get("partnerStatus", ""))[:PARTNER_STATUS_MAX],
        sequence=sequence,
        sent_at=now,
    )
    step_record(order, "acknowledged", str(response.get("partnerStatus", "")))
    transaction.on_commit(lambda: staff_tell(order, "New order"))


def delivery_confirm(order: Order, *, event_id: str, version=None) -> Delivery | None:
    """A "processed" callback: it confirms the delivery of its response version, or the latest sent
    one when it names none. The order completes when its final delivery is confirmed."""
    sent = order.deliveries.filter(state__in=[DeliveryState.SENT, DeliveryState.CONFIRMED]).exclude(sequence=None)
    delivery = None
    if isinstance(version, int) and not isinstance(version, bool):
        delivery = sent.filter(sequence=version).first()
    if delivery is None:
        delivery = sent.filter(state=DeliveryState.SENT).order_by("-sequence").first()
    if delivery is None:
        step_record(order, "event", f"processed ({event_id}), no delivery waiting for it")
        return None
    if delivery.state == DeliveryState.SENT:
        Delivery.objects.filter(pk=delivery.pk).update(state=DeliveryState.CONFIRMED, confirmed_at=timezone.now())
        step_record(order, "confirmed", f"{delivery.get_kind_display()} ({event_id})")
    if delivery.kind == DeliveryKind.FINAL:
        order_complete(transaction_id=order.transaction_id, event_id=event_id)
    return delivery


def due_at(product, start) -> object:
    hours = getattr(product, "turnaround_hours", None)
    return start + timedelta(hours=hours) if hours else None


def staff_tell(order: Order, what: str) -> bool:
    """E-mail the product's staff address about the order (no borrower data: a reference and a link)."""
    product = product_get(name=order.product_name)
    if product is None or not product.staff_email:
        return False
    link = settings.PUBLIC_BASE_URL.rstrip("/") + reverse("admin:fulfillment_stafforder_change", args=[order.pk])
    due = f"Due: {order.due_at:%Y-%m-%d %H:%M} UTC\n" if order.due_at else ""
    send_mail(
        subject=f"{what}: {product.listing_name or product.name} {order.reference_number}",
        message=f"{what}: {order.reference_number} ({product.listing_name or product.name}).\n{due}{link}\n",
        from_email=settings.DEFAULT_FROM_EMAIL,
        recipient_list=[product.staff_email],
    )
    return True


def overdue_tell() -> int:
    """Tell staff of every order past its due time, once each; how many."""
    told = 0
    now = timezone.now()
    overdue = Order.objects.filter(
        status=OrderStatus.WITH_STAFF, due_at__lt=now, overdue_notified_at__isnull=True
    ).order_by("due_at")
    for order in overdue[:500]:
        if Order.objects.filter(pk=order.pk, overdue_notified_at__isnull=True).update(overdue_notified_at=now):
            staff_tell(order, "Order past due")
            step_record(order, "overdue", f"due {order.due_at:%Y-%m-%d %H:%M} UTC")
            told += 1
    return told
