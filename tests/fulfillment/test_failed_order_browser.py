"""Admin pages in Chromium: a failed order's page per kind of failure (the cause and what to do on
top, Retry only where it can help, who ordered it, no empty section), and the index's counts of the
orders to work on one line. Screenshots in test-artifacts/ui/failed-order/ and test-artifacts/ui/."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from partner.fulfillment.models import FailureCode, Order, OrderStatus

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OUTAGE = (
    "Gave up after retries: ServiceUnavailableError: transaction retrieval GET /partner/v2/transactions/x"
    " — HTTP 500: {}"
)


@pytest.mark.parametrize(
    "name, code, reason, cause, retry",
    [
        ("platform-outage", FailureCode.RETRIES_EXHAUSTED, OUTAGE, "The loan platform was unavailable", True),
        ("wrong-credentials", FailureCode.CREDENTIALS_INVALID, "The password is wrong.", "were not accepted", False),
        ("loan-data-refused", FailureCode.ORDER_REFUSED, "No ZIP code.", "could not use the lender's loan data", False),
    ],
)
def test_a_failed_orders_page_says_cause_and_action(live_server, signed_in, shot, name, code, reason, cause, retry):
    from partner.catalog.models import PartnerAccount, PartnerCompany

    account = PartnerAccount.objects.create(
        username="ann.lender", company=PartnerCompany.objects.create(name="Harbor Lending")
    )
    order = Order.objects.create(
        transaction_id=f"txn-{name}",
        reference_number="AP-1001",
        product_name="appraisal",
        status=OrderStatus.FAILED,
        failure_code=code,
        failure_reason=reason,
        ordered_by=account,
    )
    page = signed_in
    page.goto(live_server.url + reverse("admin:fulfillment_order_change", args=[order.pk]))
    outcome = page.locator("#order-outcome")
    expect(outcome.locator("#order-cause")).to_contain_text(cause)
    expect(outcome.locator("#order-next")).to_contain_text("What to do:")
    expect(outcome.locator("#order-who")).to_have_text("Ordered by ann.lender of Harbor Lending (appraisal).")
    expect(outcome.get_by_role("button", name="Retry the order")).to_have_count(1 if retry else 0)
    expect(outcome).not_to_contain_text("Error")
    expect(page.locator("h2", has_text="The response")).to_have_count(0)  # nothing to show: no section
    shot(f"failed-order/{name}")


def test_the_admin_index_shows_the_queue_counts_on_one_line(live_server, signed_in, shot):
    page = signed_in
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(live_server.url + reverse("admin:index"))
    counts = page.locator("#staff-queue-counts .staff-queue-line")
    expect(counts).to_have_text("0 waiting, 0 overdue")
    tops = counts.evaluate("(node) => [...node.querySelectorAll('a')].map((a) => a.getBoundingClientRect().top)")
    assert len(tops) == 2 and tops[0] == tops[1], tops  # "0 waiting" and "0 overdue" on one line
    shot("admin-index-queue-counts", page.locator("#staff-queue-module"))
