"""The orders' figures: outcomes, failures and turnarounds (counted), open orders (read when scraped).

A turnaround runs from the order's opening (the "created" webhook, processed within a moment of
its arrival) to the delivery of our response, and to its completion (the service's callback).
"""

from django.db.models import Count
from prometheus_client import Counter, Histogram

from partner.core.metrics import gauge
from partner.fulfillment.models import FINAL_STATUSES, Order
from partner.fulfillment.orders.selectors import orders_awaiting_confirmation

ORDERS_FINISHED = Counter(
    "partner_orders_finished",
    "Orders that ended, by product and outcome (completed, failed, declined).",
    ["product", "outcome"],
)
FAILURES = Counter("partner_order_failures", "Orders failed, by failure code.", ["code"])
TURNAROUND = Histogram(
    "partner_order_turnaround_seconds",
    "From the order's webhook to its delivery (stage=delivered) and its completion (stage=completed).",
    ["product", "stage"],
    buckets=(1, 2, 5, 10, 30, 60, 300, 900, 3600, 4 * 3600, 86400, 3 * 86400, 7 * 86400),
)


def _product(order: Order) -> str:
    return order.product_name or "unknown"


def order_delivered(order: Order, when) -> None:
    TURNAROUND.labels(_product(order), "delivered").observe((when - order.created_at).total_seconds())


def order_completed(order: Order, when) -> None:
    TURNAROUND.labels(_product(order), "completed").observe((when - order.created_at).total_seconds())
    ORDERS_FINISHED.labels(_product(order), "completed").inc()


def order_declined(order: Order) -> None:
    ORDERS_FINISHED.labels(_product(order), "declined").inc()


def order_failed(order: Order, code: str) -> None:
    FAILURES.labels(code or "unknown").inc()
    ORDERS_FINISHED.labels(_product(order), "failed").inc()


def orders_collect():
    open_orders = (
        Order.objects.exclude(status__in=FINAL_STATUSES)
        .values_list("status", "product_name")
        .annotate(count=Count("pk"))
    )
    samples = {(status, product or "unknown"): count for status, product, count in open_orders}
    yield gauge("partner_orders_open", "Orders not finished, by status and product.", samples, ("status", "product"))
    yield gauge(
        "partner_orders_awaiting_confirmation",
        "Delivered orders whose 'processed' callback has not come within CONFIRMATION_WAIT_SECONDS.",
        {(): orders_awaiting_confirmation().count()},
    )
