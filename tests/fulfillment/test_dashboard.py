"""The operations dashboard in the admin (/admin/dashboard/): its figures, charts, links and access."""

import re
from datetime import datetime, time, timedelta
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse
from django.utils import timezone

from partner.fulfillment.models import FailureCode, Order, OrderStatus
from partner.fulfillment.orders.figures import Percentiles, orders_window, percentile
from partner.inbox.models import Notification, NotificationState
from partner.operations.dashboard import day_text, duration_text

pytestmark = pytest.mark.django_db

URL = "/admin/dashboard/"
ADDRESS, DISCLOSURE = "address-verification", "disclosure-status"


def days_ago(days: int, *, hour: int = 10, seconds: float = 0) -> datetime:
    """`hour` o'clock (plus `seconds`) on the day `days` before today, in the current time zone."""
    day = timezone.localdate() - timedelta(days=days)
    return timezone.make_aware(datetime.combine(day, time(hour))) + timedelta(seconds=seconds)


def order(transaction_id: str, product: str, status: str = OrderStatus.VALIDATION_REQUESTED, **times) -> Order:
    made = Order.objects.create(transaction_id=transaction_id, product_name=product, status=status)
    fields = {name: value for name, value in times.items() if name.endswith("_at")}
    others = {name: value for name, value in times.items() if not name.endswith("_at")}
    Order.objects.filter(pk=made.pk).update(**fields, **others)  # created_at is auto_now_add
    return made


def notification(key: str, state: str, received_at: datetime) -> None:
    made = Notification.objects.create(
        dedupe_key=key, resource_type="urn:svc:platform:transaction", resource_id=key, event_type="created", state=state
    )
    Notification.objects.filter(pk=made.pk).update(received_at=received_at)


@pytest.fixture
def orders():
    """Orders over four days and two products, an old one outside the default window, and an inbox backlog."""
    start = days_ago(2)
    for n, (to_delivery, to_completion) in enumerate([(10, 60), (20, 120), (30, 180), (40, 240), (50, 300)]):
        order(
            f"done-{n}",
            ADDRESS,
            OrderStatus.REQUEST_COMPLETED,
            created_at=start,
            delivered_at=start + timedelta(seconds=to_delivery),
            completed_at=start + timedelta(seconds=to_completion),
        )
    for n, (minute, reason) in enumerate([(5, "Gave up after retries: 503"), (30, "Gave up after retries: timeout")]):
        order(
            f"failed-{n}",
            ADDRESS,
            OrderStatus.FAILED,
            created_at=days_ago(1),
            failed_at=days_ago(1, seconds=minute * 60),
            failure_code=FailureCode.RETRIES_EXHAUSTED,
            failure_reason=reason,
        )
    order("open-today", ADDRESS)  # opened now
    order(
        "refused",
        DISCLOSURE,
        OrderStatus.FAILED,
        created_at=days_ago(1),
        failed_at=days_ago(1, seconds=1),
        failure_code=FailureCode.CREDENTIALS_INVALID,
        failure_reason="Credentials invalid for lender.x",
    )
    # Delivered three days ago, never confirmed: awaiting confirmation, and open for more than an hour.
    order(
        "awaiting",
        DISCLOSURE,
        OrderStatus.RESPONSE_DELIVERED,
        created_at=days_ago(3),
        delivered_at=days_ago(3, seconds=100),
    )
    order(
        "old",
        ADDRESS,
        OrderStatus.REQUEST_COMPLETED,
        created_at=days_ago(20),
        delivered_at=days_ago(20, seconds=5),
        completed_at=days_ago(20, seconds=6),
    )
    now = timezone.now()
    notification("n-received-1", NotificationState.RECEIVED, now - timedelta(hours=2))
    notification("n-received-2", NotificationState.RECEIVED, now - timedelta(minutes=1))
    notification("n-queued", NotificationState.QUEUED, now - timedelta(minutes=5))
    notification("n-processing", NotificationState.PROCESSING, now - timedelta(seconds=30))
    notification("n-processed", NotificationState.PROCESSED, now - timedelta(days=1))


def test_the_selectors_count_by_day_product_and_outcome_and_compute_the_percentiles(orders):
    window = orders_window(days=14)

    assert window.counts == {"completed": 5, "failed": 3, "declined": 0, "open": 2} and window.total == 10
    by_day = {d.day: d.counts for d in window.totals}
    assert len(by_day) == 14
    assert by_day[days_ago(2).date()] == {"completed": 5, "failed": 0, "declined": 0, "open": 0}
    assert by_day[days_ago(1).date()] == {"completed": 0, "failed": 3, "declined": 0, "open": 0}
    assert by_day[timezone.localdate()] == {"completed": 0, "failed": 0, "declined": 0, "open": 1}

    address, disclosure = window.products  # the busiest first
    assert (address.product, address.counts) == (ADDRESS, {"completed": 5, "failed": 2, "declined": 0, "open": 1})
    assert (disclosure.product, disclosure.counts) == (
        DISCLOSURE,
        {"completed": 0, "failed": 1, "declined": 0, "open": 1},
    )
    # The old order (20 days ago) is outside: its 5 s would lower the percentiles.
    assert address.turnaround == {"delivered": Percentiles(5, 30.0, 46.0), "completed": Percentiles(5, 180.0, 276.0)}
    assert disclosure.turnaround == {"delivered": Percentiles(1, 100.0, 100.0), "completed": None}

    failures = [(f.code, f.count, f.latest_reason) for f in window.failures]
    assert failures == [
        (FailureCode.RETRIES_EXHAUSTED, 2, "Gave up after retries: timeout"),
        (FailureCode.CREDENTIALS_INVALID, 1, "Credentials invalid for lender.x"),
    ]
    assert orders_window(days=30).counts["completed"] == 6  # the old one is in the longer window


def test_percentiles_interpolate_like_percentile_cont():
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 0.9) == 46.0
    assert percentile([7.0], 0.9) == 7.0


def card(page: str, label: str) -> str:
    """The figure shown on the card named `label`."""
    found = re.search(r'class="ops-figure">(\d+)</span>\s*<span class="ops-card-label">' + re.escape(label), page)
    assert found, label
    return found.group(1)


def test_the_page_shows_the_figures_charts_and_links(staff, orders):
    response = staff.get(URL)
    assert response.status_code == 200
    page = response.content.decode()

    assert card(page, "Orders") == "10"
    assert (card(page, "Completed"), card(page, "Failed"), card(page, "Open")) == ("5", "3", "2")
    assert card(page, "Awaiting confirmation") == "1"
    assert card(page, "Open longer than 1 hour") == "1"
    assert card(page, "Inbox backlog") == "4"
    assert "oldest waiting 2 h 0 min" in page
    assert "No orders in the last" not in page

    # The turnarounds of address verification: 10..50 s to delivery, 60..300 s to completion.
    row = page[page.index(f">{ADDRESS}</a></th>") :].split("</tr>")[0]
    cells = re.findall(r'data-stage="([a-z]+-p\d0)">(?:<a [^>]*>)?([^<]+)<', row)
    assert cells == [
        ("delivered-p50", "30 s"),
        ("delivered-p90", "46 s"),
        ("completed-p50", "3 min 0 s"),
        ("completed-p90", "4 min 36 s"),
    ]

    # The charts: one for all products and one each; each bar with its text alternative.
    assert page.count('<figure class="ops-chart">') == 3
    assert f"<title>{day_text(days_ago(2).date())}: 5 completed, 0 failed, 0 declined, 0 open</title>" in page
    assert f"<title>{day_text(days_ago(1).date())}: 0 completed, 3 failed, 0 declined, 0 open</title>" in page
    assert "10 in all: 5 completed, 3 failed, 0 declined, 2 open" in page

    # Failures by code, with the latest reason; the backlog by state.
    failures = page[page.index('id="failures"') : page.index('id="backlog"')]
    assert "Gave up after retries" in failures and ">2</a>" in failures
    assert "Gave up after retries: timeout" in failures and ": 503" not in failures
    assert "Credentials invalid for lender.x" in failures
    backlog = page[page.index('id="backlog"') :]
    assert re.findall(r"<th scope=\"row\">(\w+)</th>\s*<td[^>]*><a [^>]*>(\d+)</a>", backlog) == [
        ("Received", "2"),
        ("Queued", "1"),
        ("Processing", "1"),
    ]


def listed(client, link: str) -> set[str]:
    """The transaction ids the orders' admin list shows at `link` (each row's, under its Details)."""
    page = client.get(link.replace("&amp;", "&")).content.decode()
    assert "?e=1" not in page  # the admin did not refuse the filter
    return set(re.findall(r"<dt>Transaction</dt><dd>((?:done|failed|open|refused|awaiting|old)[\w-]*)</dd>", page))


def test_each_figure_links_to_the_list_it_summarises(staff, orders):
    context = staff.get(URL).context
    cards = {c["label"]: c["link"] for c in context["cards"]}

    assert listed(staff, cards["Failed"]) == {"failed-0", "failed-1", "refused"}
    assert listed(staff, cards["Open"]) == {"open-today", "awaiting"}
    assert listed(staff, cards["Orders"]) == {f"done-{n}" for n in range(5)} | {
        "failed-0",
        "failed-1",
        "open-today",
        "refused",
        "awaiting",
    }
    assert listed(staff, cards["Awaiting confirmation"]) == {"awaiting"}
    assert listed(staff, cards["Open longer than 1 hour"]) == {"awaiting"}
    failure_links = {f["figures"].code: f["link"] for f in context["failures"]}
    assert listed(staff, failure_links[FailureCode.CREDENTIALS_INVALID]) == {"refused"}
    (bar,) = [b for b in context["chart"].bars if b.total == 5]
    assert listed(staff, bar.link) == {f"done-{n}" for n in range(5)}
    backlog = staff.get(cards["Inbox backlog"]).content.decode()
    assert "n-received-1" in backlog and "n-queued" in backlog and "n-processed" not in backlog


def test_with_no_orders_the_page_says_so_instead_of_empty_charts(staff):
    response = staff.get(URL)
    assert response.status_code == 200
    page = response.content.decode()
    assert "No orders in the last 14 days." in page
    assert '<figure class="ops-chart">' not in page
    assert "No failed orders in the last 14 days." in page
    assert card(page, "Inbox backlog") == "0" and "nothing waiting" in page


def test_the_window_is_7_14_or_30_days_and_a_bad_value_falls_back_to_14(staff, orders):
    assert staff.get(URL, {"days": "30"}).context["orders"].counts["completed"] == 6
    assert staff.get(URL, {"days": "7"}).context["days"] == 7
    for bad in ("5", "abc", "-1", "", "14.5"):
        response = staff.get(URL, {"days": bad})
        assert response.status_code == 200
        assert response.context["days"] == 14 and len(response.context["orders"].totals) == 14
    assert "No orders in the last 30 days." not in staff.get(URL, {"days": "30"}).content.decode()


def staff_user(django_user_model, client, *codenames):
    user = django_user_model.objects.create_user("ops", "ops@partner.example", "ops-password-1", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    client.force_login(user)
    return client


def test_staff_who_may_not_view_the_orders_are_refused(client, django_user_model):
    viewer = staff_user(django_user_model, client, "view_notification")
    assert viewer.get(URL).status_code == 403
    assert reverse("admin:dashboard") not in viewer.get(reverse("admin:index")).content.decode()


def test_a_view_only_user_sees_the_page_without_the_inbox_links_they_may_not_follow(client, django_user_model, orders):
    viewer = staff_user(django_user_model, client, "view_order")
    response = viewer.get(URL)
    assert response.status_code == 200
    assert reverse("admin:inbox_notification_changelist") not in response.content.decode()
    assert reverse("admin:dashboard") in viewer.get(reverse("admin:index")).content.decode()


def test_anonymous_users_are_sent_to_the_login(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login")) and "next=/admin/dashboard/" in response["Location"]


def test_the_admin_index_links_to_the_dashboard(staff):
    assert f'href="{reverse("admin:dashboard")}"' in staff.get(reverse("admin:index")).content.decode()


def many_orders(count: int) -> None:
    products, statuses = [ADDRESS, DISCLOSURE, "appraisal"], list(OrderStatus)
    Order.objects.bulk_create(
        Order(transaction_id=f"many-{n}", product_name=products[n % 3], status=statuses[n % len(statuses)])
        for n in range(count)
    )
    for n in range(count):  # spread over the window, delivered and completed some seconds later
        created = days_ago(n % 14, seconds=n)
        Order.objects.filter(transaction_id=f"many-{n}").update(
            created_at=created,
            delivered_at=created + timedelta(seconds=n % 50 + 1),
            completed_at=created + timedelta(seconds=n % 70 + 60) if n % 2 else None,
            failed_at=created,
            failure_code=list(FailureCode)[n % len(FailureCode)],
            failure_reason=f"reason {n}",
        )


@pytest.mark.parametrize("count", [10, 200])
def test_the_number_of_queries_does_not_grow_with_the_orders(staff, django_assert_max_num_queries, count):
    many_orders(count)
    for n in range(count // 10):
        notification(f"n-{n}", NotificationState.RECEIVED, timezone.now())
        notification(f"i-{n}", NotificationState.IGNORED, timezone.now())
    with django_assert_max_num_queries(9):
        response = staff.get(URL, {"days": "30"})
    assert response.context["orders"].total == count


def test_durations_read_at_a_glance():
    assert [duration_text(s) for s in (None, 4.54, 46, 276, 7260, 3 * 86400 + 4 * 3600)] == [
        "–",
        "4.5 s",
        "46 s",
        "4 min 36 s",
        "2 h 1 min",
        "3 d 4 h",
    ]


class _TableReader(HTMLParser):
    """The header texts and each body row's cell texts of the table inside `<div id="{section}">`."""

    def __init__(self, section: str):
        super().__init__()
        self.section, self.depth, self.in_table = section, 0, False
        self.headers, self.rows, self.cell, self.row = [], [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "div" and dict(attrs).get("id") == self.section:
            self.depth = 1
        elif tag == "div" and self.depth:
            self.depth += 1
        if not self.depth:
            return
        if tag == "table":
            self.in_table = True
        elif self.in_table and tag == "tr":
            self.row = []
        elif self.in_table and tag in ("th", "td"):
            self.cell = []

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1
        if not self.in_table:
            return
        if tag in ("th", "td") and self.cell is not None:
            self.row.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.headers:
                self.rows.append(self.row)
            else:
                self.headers = self.row
            self.row = None
        elif tag == "table":
            self.in_table = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def table_of(page: str, section: str) -> tuple[list[str], list[dict]]:
    reader = _TableReader(section)
    reader.feed(page)
    return reader.headers, [dict(zip(reader.headers, row, strict=True)) for row in reader.rows]


def test_the_by_product_table_has_one_header_per_cell_each_over_its_own_figure(staff, orders):
    order("declined-1", ADDRESS, OrderStatus.DECLINED, created_at=days_ago(1))
    window = orders_window(days=14)

    headers, rows = table_of(staff.get(URL).content.decode(), "products")

    assert headers[:6] == ["Product", "Completed", "Failed", "Declined", "Open", "Total"]
    expected = {
        figures.product: {
            "Product": figures.product,
            **{outcome.capitalize(): str(figures.counts[outcome]) for outcome in ("completed", "failed", "declined")},
            "Open": str(figures.counts["open"]),
            "Total": str(figures.total),
        }
        for figures in window.products
    }
    assert len(rows) == 2
    for row in rows:  # zip(strict=True) above: as many cells as headers in every row
        mine = expected[row["Product"]]
        assert {header: row[header] for header in mine} == mine
    by_name = {row["Product"]: row for row in rows}
    assert (by_name[ADDRESS]["Declined"], by_name[ADDRESS]["Open"], by_name[ADDRESS]["Total"]) == ("1", "1", "9")
    assert by_name[ADDRESS]["To delivery p50"] != "" and by_name[DISCLOSURE]["Failed"] == "1"
