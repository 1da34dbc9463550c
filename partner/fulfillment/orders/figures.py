"""The orders' figures behind the operations dashboard: the orders of a window of days, their turnarounds and failures.

Read-only, and a fixed number of queries whatever the number of orders: counts are grouped in SQL
(TruncDate by the current time zone's day). An order belongs to the day it was opened (its webhook)
and is counted by its outcome now: completed, failed, or open (any other status, as the metrics'
`FINAL_STATUSES` say).

Turnaround percentiles (webhook to delivery, webhook to completion) are linear interpolations
between the two nearest durations, as PostgreSQL's `percentile_cont`: computed there in SQL, so no
row leaves the database; on SQLite (local runs only: the preflight refuses it in production) from
the two timestamps of at most `TURNAROUND_SAMPLE_LIMIT` of the window's newest finished orders.
"""

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta

from django.db import connection
from django.db.models import (
    Aggregate,
    Case,
    CharField,
    Count,
    DurationField,
    F,
    Max,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import TruncDate
from django.utils import timezone

from partner.fulfillment.models import FINAL_STATUSES, FailureCode, Order, OrderStatus
from partner.fulfillment.orders.selectors import orders_awaiting_confirmation

OPEN_STATUSES = tuple(status for status in OrderStatus if status not in FINAL_STATUSES)
# An order's outcome now, by its status: the order admin's status filter shows the same orders.
OUTCOME_STATUSES = {
    "completed": (OrderStatus.REQUEST_COMPLETED,),
    "failed": (OrderStatus.FAILED,),
    "declined": (OrderStatus.DECLINED,),
    "open": OPEN_STATUSES,
}
OUTCOMES = tuple(OUTCOME_STATUSES)
STAGES = ("delivered", "completed")  # a turnaround runs from the webhook to the order's `<stage>_at`
# Without a due time per product yet, an order still open after this long is shown as overdue.
OPEN_TOO_LONG = timedelta(hours=1)
TURNAROUND_SAMPLE_LIMIT = 100_000  # SQLite only: the newest finished orders of the window read

_OUTCOME = Case(
    *(When(status__in=statuses, then=Value(outcome)) for outcome, statuses in OUTCOME_STATUSES.items()),
    output_field=CharField(),
)


@dataclass(frozen=True)
class Percentiles:
    count: int  # orders measured
    p50: float  # seconds
    p90: float


@dataclass(frozen=True)
class DayCounts:
    day: date
    counts: dict[str, int]  # outcome -> orders

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class ProductFigures:
    product: str  # "" when the order's product is not known (yet)
    days: list[DayCounts]
    counts: dict[str, int]  # outcome -> orders in the window
    turnaround: dict[str, Percentiles | None]  # stage -> percentiles (None: no order reached it)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True)
class FailureFigures:
    code: str  # "" for failures recorded without a code
    label: str
    count: int
    latest_at: datetime | None
    latest_reason: str


@dataclass(frozen=True)
class OrdersWindow:
    days: int
    since: datetime  # midnight of the window's first day, in the current time zone
    totals: list[DayCounts]  # every day of the window, all products
    products: list[ProductFigures] = field(default_factory=list)  # busiest first
    failures: list[FailureFigures] = field(default_factory=list)  # most frequent first

    @property
    def counts(self) -> dict[str, int]:
        return {outcome: sum(day.counts[outcome] for day in self.totals) for outcome in OUTCOMES}

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def window_start(*, days: int, now: datetime | None = None) -> datetime:
    """Midnight, in the current time zone, of the first of the last `days` days (today included)."""
    first = timezone.localdate(now) - timedelta(days=days - 1)
    return timezone.make_aware(datetime.combine(first, time.min))


def orders_window(*, days: int, now: datetime | None = None) -> OrdersWindow:
    """The orders opened in the last `days` days: per day, product and outcome; turnarounds; failures."""
    since = window_start(days=days, now=now)
    dates = [since.date() + timedelta(days=n) for n in range(days)]
    turnarounds = order_turnarounds(since=since)
    totals, by_product = defaultdict(Counter), defaultdict(lambda: defaultdict(Counter))
    for (day, product, outcome), count in orders_per_day(since=since).items():
        totals[day][outcome] += count
        by_product[product][day][outcome] += count

    def day_counts(per_day) -> list[DayCounts]:
        return [DayCounts(day, {outcome: per_day[day][outcome] for outcome in OUTCOMES}) for day in dates]

    products = []
    for product in sorted(by_product.keys() | {product for product, _ in turnarounds}):
        days_of_product = day_counts(by_product[product])
        counts = {outcome: sum(d.counts[outcome] for d in days_of_product) for outcome in OUTCOMES}
        turnaround = {stage: turnarounds.get((product, stage)) for stage in STAGES}
        products.append(ProductFigures(product, days_of_product, counts, turnaround))
    products.sort(key=lambda figures: -figures.total)
    return OrdersWindow(
        days=days,
        since=since,
        totals=day_counts(totals),
        products=products,
        failures=order_failures(since=since),
    )


def orders_per_day(*, since: datetime) -> dict[tuple[date, str, str], int]:
    """(day, product, outcome) -> orders opened since `since`: one grouped query."""
    rows = (
        Order.objects.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"), outcome=_OUTCOME)
        .values_list("day", "product_name", "outcome")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return {(day, product, outcome): count for day, product, outcome, count in rows}


def order_turnarounds(*, since: datetime) -> dict[tuple[str, str], Percentiles]:
    """(product, stage) -> p50 and p90 of the turnarounds of the orders opened since `since`."""
    finished = Order.objects.filter(
        Q(delivered_at__isnull=False) | Q(completed_at__isnull=False), created_at__gte=since
    )
    if connection.vendor == "postgresql":
        return _turnarounds_in_sql(finished)
    return _turnarounds_in_python(finished)


class _PercentileCont(Aggregate):
    """PostgreSQL's percentile_cont over intervals (NULLs, orders that have not reached the stage, are skipped)."""

    function = "PERCENTILE_CONT"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"

    def __init__(self, expression, *, fraction: float):
        super().__init__(expression, fraction=float(fraction), output_field=DurationField())


def _turnarounds_in_sql(finished) -> dict[tuple[str, str], Percentiles]:
    aggregates = {}
    for stage in STAGES:
        duration = F(f"{stage}_at") - F("created_at")
        aggregates[f"{stage}_n"] = Count(f"{stage}_at")
        aggregates[f"{stage}_p50"] = _PercentileCont(duration, fraction=0.5)
        aggregates[f"{stage}_p90"] = _PercentileCont(duration, fraction=0.9)
    found = {}
    for row in finished.values("product_name").annotate(**aggregates).order_by():
        for stage in STAGES:
            if row[f"{stage}_n"]:
                p50, p90 = row[f"{stage}_p50"], row[f"{stage}_p90"]
                found[row["product_name"], stage] = Percentiles(
                    row[f"{stage}_n"], p50.total_seconds(), p90.total_seconds()
                )
    return found


def _turnarounds_in_python(finished) -> dict[tuple[str, str], Percentiles]:
    rows = finished.order_by("-created_at").values_list("product_name", "created_at", "delivered_at", "completed_at")
    durations = defaultdict(list)
    for product, created_at, *stage_times in rows[:TURNAROUND_SAMPLE_LIMIT]:
        for stage, at in zip(STAGES, stage_times, strict=True):
            if at is not None:
                durations[product, stage].append((at - created_at).total_seconds())
    found = {}
    for key, values in durations.items():
        values.sort()
        found[key] = Percentiles(len(values), percentile(values, 0.5), percentile(values, 0.9))
    return found


def percentile(ordered: list[float], fraction: float) -> float:
    """The `fraction` percentile of sorted values, interpolated between the two nearest as percentile_cont."""
    position = fraction * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def order_failures(*, since: datetime) -> list[FailureFigures]:
    """Orders opened since `since` and failed now, by failure code, with the latest failure's reason."""
    failed = Order.objects.filter(created_at__gte=since, status=OrderStatus.FAILED)
    latest = (
        failed.filter(failure_code=OuterRef("failure_code"))
        .order_by(F("failed_at").desc(nulls_last=True), "-pk")
        .values("failure_reason")[:1]
    )
    rows = (
        failed.values("failure_code")
        .annotate(count=Count("pk"), latest_at=Max("failed_at"), latest_reason=Subquery(latest))
        .order_by("-count", "failure_code")
    )
    labels = dict(FailureCode.choices)
    return [
        FailureFigures(
            code=row["failure_code"],
            label=labels.get(row["failure_code"], row["failure_code"] or "No code"),
            count=row["count"],
            latest_at=row["latest_at"],
            latest_reason=row["latest_reason"] or "",
        )
        for row in rows
    ]


def orders_awaiting_confirmation_count() -> int:
    return orders_awaiting_confirmation().count()


def orders_open_too_long(*, now: datetime | None = None):
    """Open orders (of any day) opened more than OPEN_TOO_LONG ago."""
    return Order.objects.filter(status__in=OPEN_STATUSES, created_at__lt=(now or timezone.now()) - OPEN_TOO_LONG)
