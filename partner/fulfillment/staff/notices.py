"""What staff are told of the orders they work, by e-mail: a new order, an order past its due time.

Each notice is sent by a task that retries (`fulfillment.staff_notice`, through `partner.core.mail`
and the one retry rule of `partner.core.retries`), and marked sent on the order only once the mail
server took it (`staff_notified_at`, `overdue_notified_at`): a mail server that is away, or a
message it refuses, costs a retry, never the notice.

- An order a partner's own system works (a connected order, assigned to its connection's account)
  owes no new-order notice: staff hear of it once one of them takes it over (then the new-order
  notice is owed as for any order) or once it is past due.
- A new order: its notice is enqueued once the acknowledgement went out, by the receiver of the
  order's `ACKNOWLEDGED` announcement (`order_acknowledged_receive`, connected in
  `FulfillmentConfig.ready`; the sender announces, it never imports the staff's package), after
  the commit that records it.
- The periodic `notices_due` (beat, every few minutes) enqueues the notice of every open order
  past its due time that has none yet, and again the new-order notice of every order whose notice
  is not marked sent a while after it was due (its task gave up, or its message never reached the
  broker). A notice enqueued recently is not enqueued again while its task may still be retrying
  (a key of the shared cache, `NOTICE_PENDING_SECONDS`), so a retried notice is not sent twice.

An e-mail carries what staff triage by: the product, our reference, the loan number, the subject
property's city and state, the due time, and a link to the order's page; never the borrower's
name, the street address or anything else of the borrower's (the retention rules keep those to the
order's page). Text that goes into the subject is one line (`partner.catalog.validation.one_line`).

When a staff-worked order is due is the order's own rule (`orders.services.due_at`).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.urls import reverse
from django.utils import timezone

from partner.catalog.models import Product
from partner.catalog.selectors import product_get
from partner.catalog.validation import one_line
from partner.core.mail import mail_send
from partner.fulfillment.enqueue import staff_notice_enqueue
from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.staff.selectors import by_staff_or_nobody

logger = logging.getLogger(__name__)

NEW_ORDER = "new_order"
PAST_DUE = "past_due"
NOTICES = {
    NEW_ORDER: ("New order", "staff_notified_at"),
    PAST_DUE: ("Order past due", "overdue_notified_at"),
}
# How long a notice enqueued stays with its task (its retries take about a minute, CELERY_TASK_*)
# before the periodic pass enqueues it again.
NOTICE_PENDING_SECONDS = 30 * 60
BATCH = 500


def _place(order: Order) -> str:
    """The subject property's city and state ("Austin, TX"): where, without the street."""
    loan = order.request.get("loan") if isinstance(order.request, dict) else None
    prop = loan.get("property") if isinstance(loan, dict) else None
    prop = prop if isinstance(prop, dict) else {}
    parts = [one_line(prop.get(key)) for key in ("city", "state") if isinstance(prop.get(key), str)]
    return ", ".join(part for part in parts if part)


def notice_message(order: Order, product, what: str) -> tuple[str, str]:
    """(subject, body) of a notice: what staff triage by, never the borrower's data."""
    product_label = one_line(product.listing_name or product.name)
    place = _place(order)
    subject = one_line(" - ".join(part for part in (what, product_label, order.reference_number, place) if part))
    link = settings.PUBLIC_BASE_URL.rstrip("/") + reverse("admin:fulfillment_stafforder_change", args=[order.pk])
    lines = [
        f"{what}: {product_label}",
        f"Reference: {order.reference_number or order.transaction_id}",
        f"Loan number: {one_line(order.loan_number) or 'not given'}",
        f"Property: {place or 'city and state not given'}",
        f"Due: {order.due_at:%Y-%m-%d %H:%M} UTC" if order.due_at else "Due: no turnaround promised",
        "",
        f"Work it here: {link}",
    ]
    return subject, "\n".join(lines) + "\n"


def staff_notice_send(*, order_id: int, notice: str) -> bool:
    """Send one notice of the order, if it is still owed, and mark it sent; False when nothing is owed
    (sent already, the order closed, or no staff address). A mail server's error propagates: the
    task retries it, and the notice stays unmarked."""
    what, marker = NOTICES[notice]
    order = Order.objects.filter(pk=order_id, **{f"{marker}__isnull": True}).first()
    if order is None or (notice == PAST_DUE and order.status != OrderStatus.WITH_STAFF):
        return False
    if notice == NEW_ORDER and not Order.objects.filter(by_staff_or_nobody(), pk=order.pk).exists():
        return False  # a partner's system works it: staff hear of it once taken over, or past due
    product = product_get(name=order.product_name)
    if product is None or not product.staff_email:
        return False
    subject, body = notice_message(order, product, what)
    mail_send(subject=subject, body=body, to=[product.staff_email])
    marked = Order.objects.filter(pk=order.pk, **{f"{marker}__isnull": True}).update(**{marker: timezone.now()})
    if marked and notice == PAST_DUE:
        step_record(order, "overdue", f"due {order.due_at:%Y-%m-%d %H:%M} UTC")
    return True


def staff_notice_request(order: Order, notice: str) -> bool:
    """Enqueue a notice's task after the caller's commit, unless one was enqueued within
    NOTICE_PENDING_SECONDS (it may still be retrying); True when enqueued. The key names the order's
    row by its id and arrival, so a restored or another database's order is never mistaken for it."""
    key = f"staff-notice:{notice}:{order.pk}:{order.created_at.timestamp():.6f}"
    try:
        fresh = cache.add(key, True, timeout=NOTICE_PENDING_SECONDS)
    except Exception as exc:  # the cache away must not fail the sender's transaction: enqueue anyway
        logger.warning("staff notice of order %s: cache unavailable (%s), enqueued", order.pk, type(exc).__name__)
        fresh = True
    if not fresh:
        return False
    staff_notice_enqueue(order.pk, notice)
    return True


def order_acknowledged_receive(sender, *, order_id: int, what: str, **kwargs) -> None:
    """The receiver of the fulfillment's announcements (connected in `FulfillmentConfig.ready`): an
    order acknowledged is with staff, so its new-order notice is requested (enqueued after the
    sender's commit; whether it is owed is decided when it is sent, `staff_notice_send`)."""
    if what != announcements.ACKNOWLEDGED:
        return
    order = Order.objects.filter(pk=order_id).only("pk", "created_at").first()
    if order is not None:
        staff_notice_request(order, NEW_ORDER)


def notices_due(*, now=None) -> int:
    """Enqueue every notice owed (module docstring); how many were enqueued."""
    now = now or timezone.now()
    told = Product.objects.exclude(staff_email="").values("name")  # a product without an address owes none
    open_orders = Order.objects.filter(status=OrderStatus.WITH_STAFF, staff_worked=True, product_name__in=told)
    owed = [
        (PAST_DUE, open_orders.filter(due_at__lt=now, overdue_notified_at__isnull=True).order_by("due_at")),
        (
            NEW_ORDER,
            open_orders.filter(
                by_staff_or_nobody(),
                staff_notified_at__isnull=True,
                created_at__lt=now - timedelta(seconds=NOTICE_PENDING_SECONDS),
            ).order_by("created_at"),
        ),
    ]
    enqueued = 0
    for notice, orders in owed:
        for order in orders.only("pk", "created_at")[:BATCH]:
            enqueued += staff_notice_request(order, notice)
    return enqueued
