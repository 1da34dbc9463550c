"""The operations dashboard in the admin, at /admin/dashboard/: orders, turnarounds, failures, the inbox backlog.

The figures come from selectors (`partner.fulfillment.orders.figures`, `partner.inbox.selectors`)
and the charts' geometry from `partner.core.charts`; this module reads the request, checks the
permission and lays the figures out, each with a link to the admin list it summarises.
`dashboard_install` adds the page to an admin site's URLs (`partner/operations/admin.py`).
"""

from datetime import date, datetime, timedelta
from urllib.parse import urlencode

from django.contrib.admin import AdminSite
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from partner.core.charts import Column, StackedBarChart, stacked_bar_chart
from partner.fulfillment.orders.figures import (
    OPEN_TOO_LONG,
    OUTCOME_STATUSES,
    OUTCOMES,
    STAGES,
    DayCounts,
    OrdersWindow,
    ProductFigures,
    orders_awaiting_confirmation_count,
    orders_open_too_long,
    orders_window,
)
from partner.inbox.metrics import BACKLOG_STATES
from partner.inbox.models import NotificationState
from partner.inbox.selectors import Backlog, Unhandled, inbox_backlog, notifications_unhandled

DAY_CHOICES = (7, 14, 30)
DEFAULT_DAYS = 14
PERMISSION = "fulfillment.view_order"
OUTCOME_SERIES = tuple((outcome, outcome) for outcome in OUTCOMES)
ORDERS = "admin:fulfillment_order_changelist"
NOTIFICATIONS = "admin:inbox_notification_changelist"
# How far back the webhooks of a type we do not handle are counted: long enough to be seen at the next
# look, short enough that a profile put right clears the card within the hour.
UNHANDLED_WINDOW = timedelta(hours=1)
UNHANDLED_TYPES_SHOWN = 3


def dashboard_install(site: AdminSite) -> None:
    """Add the dashboard to `site`'s URLs, ahead of its own, as `admin:dashboard` (the site class is kept)."""
    site_urls = site.get_urls

    def get_urls():
        view = site.admin_view(lambda request: dashboard_view(request, site=site))
        return [path("dashboard/", view, name="dashboard"), *site_urls()]

    site.get_urls = get_urls


def window_days(value: str | None) -> int:
    """The window asked for (`?days=`), or the default when it is not one of the choices."""
    try:
        days = int(value or "")
    except ValueError:
        return DEFAULT_DAYS
    return days if days in DAY_CHOICES else DEFAULT_DAYS


def dashboard_view(request, *, site: AdminSite):
    """The page: staff only (the site's admin_view), and only those who may view the orders."""
    if not request.user.has_perm(PERMISSION):
        raise PermissionDenied
    now = timezone.now()
    days = window_days(request.GET.get("days"))
    orders = orders_window(days=days, now=now)
    since = {"created_at__gte": orders.since.isoformat()}
    backlog = inbox_backlog()
    may_see_inbox = request.user.has_perm("inbox.view_notification")
    context = {
        **site.each_context(request),
        "title": "Operations dashboard",
        "days": days,
        "day_choices": DAY_CHOICES,
        "orders": orders,
        "cards": [*order_cards(orders, since), *now_cards(now, backlog, may_see_inbox)],
        "chart": orders_chart(f"All products: orders per day, last {days} days", orders.totals),
        # The "By product" table's outcome columns: one header per outcome cell of each row, same order.
        "outcome_headers": [outcome.capitalize() for outcome in OUTCOMES],
        "products": [product_row(figures, since, index=n) for n, figures in enumerate(orders.products)],
        "failures": [
            {"figures": f, "link": outcome_link("failed", **since, failure_code__exact=f.code)} for f in orders.failures
        ],
        "backlog": [
            (state.label, backlog.counts[state], notifications_link(may_see_inbox, state__exact=state))
            for state in BACKLOG_STATES
        ],
        "backlog_oldest": duration_text(backlog.oldest_age(now)),
    }
    return TemplateResponse(request, "admin/dashboard.html", context)


def order_cards(orders: OrdersWindow, since: dict) -> list[dict]:
    """The window's orders: in all, then by outcome now."""
    return [
        card("Orders", orders.total, orders_link(**since), f"opened in the last {orders.days} days"),
        *(card(o.capitalize(), orders.counts[o], outcome_link(o, **since), f"of those, {o} now") for o in OUTCOMES),
    ]


def now_cards(now: datetime, backlog: Backlog, may_see_inbox: bool) -> list[dict]:
    """What needs looking at now, whatever the window (red when there is any)."""
    awaiting = orders_awaiting_confirmation_count()
    open_too_long = orders_open_too_long(now=now).count()
    return [
        card(
            "Awaiting confirmation",
            awaiting,
            orders_link(confirmation="awaiting"),
            "delivered; the service's callback is late",
            alert=awaiting > 0,
        ),
        card(
            f"Open longer than {hours(OPEN_TOO_LONG)}",
            open_too_long,
            outcome_link("open", created_at__lt=(now - OPEN_TOO_LONG).isoformat()),
            "opened any day; no due time per product yet",
            alert=open_too_long > 0,
        ),
        unhandled_card(now, notifications_unhandled(since=now - UNHANDLED_WINDOW), may_see_inbox),
        card(
            "Inbox backlog",
            backlog.total,
            notifications_link(may_see_inbox, state__in=",".join(BACKLOG_STATES)),
            f"oldest waiting {duration_text(backlog.oldest_age(now))}" if backlog.total else "nothing waiting",
        ),
    ]


def unhandled_card(now: datetime, unhandled: Unhandled, may_see_inbox: bool) -> dict:
    """Webhooks of a type we do not handle: stored and answered, but no order comes of them. Any at all
    most likely means the service's URN words are not the ones configured (SVC_URN_*)."""
    window = hours(UNHANDLED_WINDOW).removeprefix("1 ")
    if unhandled.total:
        shown = [f"{resource} {event} ({count})" for resource, event, count in unhandled.types[:UNHANDLED_TYPES_SHOWN]]
        more = len(unhandled.types) - len(shown)
        note = f"last {window}: " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    else:
        note = f"none in the last {window}"
    return card(
        "Webhooks of a type we do not handle",
        unhandled.total,
        notifications_link(
            may_see_inbox,
            state__exact=NotificationState.IGNORED,
            received_at__gte=(now - UNHANDLED_WINDOW).isoformat(),
        ),
        note,
        alert=unhandled.total > 0,
    )


def product_row(figures: ProductFigures, since: dict, *, index: int) -> dict:
    """A product's orders by outcome, its turnarounds, and its own chart."""
    name = figures.product or "(unknown)"
    of_product = {**since, "product_name__exact": figures.product}
    turnaround = []
    for stage in STAGES:
        measured = figures.turnaround[stage]
        turnaround.append(
            {
                "stage": stage,
                "count": measured.count if measured else 0,
                "p50": duration_text(measured.p50 if measured else None),
                "p90": duration_text(measured.p90 if measured else None),
                "link": orders_link(**of_product, **{f"{stage}_at__isnull": "False"}),
            }
        )
    return {
        "name": name,
        "total": figures.total,
        "link": orders_link(**of_product),
        "outcomes": [(o, figures.counts[o], outcome_link(o, **of_product)) for o in OUTCOMES],
        "turnaround": turnaround,
        "chart": orders_chart(f"{name}: orders per day", figures.days, figures.product),
        "chart_id": f"chart-product-{index}",
    }


def card(label: str, figure: int, link: str, note: str, *, alert: bool = False) -> dict:
    return {"label": label, "figure": figure, "link": link, "note": note, "alert": alert}


def orders_chart(title: str, days: list[DayCounts], product: str | None = None) -> StackedBarChart:
    """Bars per day stacked by outcome; each bar links to that day's orders (of the product)."""
    of_product = {} if product is None else {"product_name__exact": product}
    columns = [
        Column(
            label=f"{d.day:%b} {d.day.day}", values=d.counts, title=day_text(d.day), link=day_link(d.day, **of_product)
        )
        for d in days
    ]
    return stacked_bar_chart(title=title, columns=columns, series=OUTCOME_SERIES)


def orders_link(**params) -> str:
    return f"{reverse(ORDERS)}?{urlencode(params)}" if params else reverse(ORDERS)


def outcome_link(outcome: str, **params) -> str:
    return orders_link(status__in=",".join(OUTCOME_STATUSES[outcome]), **params)


def day_link(day: date, **params) -> str:
    """The orders opened on `day` (the list's date drill-down, in the current time zone)."""
    return orders_link(created_at__year=day.year, created_at__month=day.month, created_at__day=day.day, **params)


def notifications_link(allowed: bool, **params) -> str:
    """The inbox's list, for those who may see it (empty otherwise: the figure is shown without a link)."""
    return f"{reverse(NOTIFICATIONS)}?{urlencode(params)}" if allowed else ""


def day_text(day: date) -> str:
    return f"{day:%a} {day.day} {day:%b %Y}"


def hours(delta) -> str:
    count = delta.total_seconds() / 3600
    return f"{count:g} hour" + ("" if count == 1 else "s")


def duration_text(seconds: float | None) -> str:
    """A duration at a glance: "4.5 s", "46 s", "4 min 36 s", "2 h 5 min", "3 d 4 h"; "–" for none."""
    if seconds is None:
        return "–"
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"
