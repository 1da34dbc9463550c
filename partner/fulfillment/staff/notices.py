"""What staff are told of the orders they work, by e-mail: a new order, an order past its due time.

The sender tells staff of a new order once its acknowledgement went out (`staff_tell`); the periodic
`overdue_tell` e-mails staff of orders past their due time, once each. E-mails carry a reference and
a link, never borrowers' data. `due_at` is when a staff-worked order is due (the product's
turnaround from the order's arrival).
"""

from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.urls import reverse
from django.utils import timezone

from partner.catalog.selectors import product_get
from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.orders.history import step_record


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
