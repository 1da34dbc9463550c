"""The lender's panel in a real browser (Chromium through Playwright, framed by the sandbox host page):
what the partner found, failures in plain words, a panel that follows a failed order, the duplicate-order
guard, the reference and the terms, step times, the panel session, focus and the narrowest panel.

Screenshots go to test-artifacts/ui/lender-panel/.
"""

import re
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from partner.fulfillment.automated.fulfillers.base import FINDINGS_COLUMNS
from tests.helpers.browser import WAIT_MS, Host, app_state
from tests.helpers.orders import result_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


def no_overflow(page) -> bool:
    frame = page.frame(name="partner-panel")
    return frame.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0


def polls_of(page) -> int:
    """How many times the panel has asked for its order's progress so far."""
    return sum("/ui/transactions/" in url for url in page.requested_urls)


def existing(demo, *, loan=0, **order_fields):
    """A transaction of lender.demo on the service, and our order of it."""
    from partner.catalog.models import PartnerAccount
    from partner.fulfillment.models import Order
    from partner.sandbox.transactions import transaction_create

    transaction = transaction_create(
        product=demo.products["address-verification"],
        user=demo.users["lender.demo"],
        loan=demo.loans[loan],
        send_webhook=False,
    )
    order_fields.setdefault("ordered_by", PartnerAccount.objects.get(username="lender.demo"))
    order = Order.objects.create(
        transaction_id=transaction.id,
        product_name="address-verification",
        loan_number=demo.loans[loan].data["loanNumber"],
        **order_fields,
    )
    return transaction, order


def open_existing(page, service, transaction_id):
    host = Host(page, service.url).open()
    page.locator(f"tr[data-transaction-id='{transaction_id}']").get_by_role("button").click()
    app_state(host.ui, "transaction")
    return host


@pytest.fixture
def panel_shot(shot):
    """Save a screenshot under test-artifacts/ui/lender-panel/<name>.png."""
    return lambda name, target=None: shot(f"lender-panel/{name}", target)


@pytest.mark.worker
@pytest.mark.usefixtures("celery_worker_live")
def test_a_corrected_address_shows_before_and_after_the_reference_and_each_steps_time(
    demo, service, page, host, panel_shot, service_calls
):
    from partner.catalog.models import Product
    from partner.fulfillment.models import Order

    Product.objects.filter(name="address-verification").update(fee="45.00", turnaround_hours=24)
    host.open()
    ui = host.launch_new(loan="DEMO-1002")  # the city is wrong: 10001 is New York, not Boston
    app_state(ui, "order")
    expect(ui.locator("#order-terms")).to_have_text("Fee: $45.00 per order · Expected turnaround: 1 day")
    panel_shot("01-form-with-terms")
    ui.locator("#order-submit").click()
    app_state(ui, "transaction")
    service_calls.clear()
    polls_before = polls_of(page)
    expect(ui.locator("#app")).to_have_attribute("data-step", "completed", timeout=90_000)
    # The panel followed the order by polling, and its polls never showed the origin to the service.
    assert polls_of(page) > polls_before
    assert not [call for call in service_calls if "/origins/" in call["url"]]

    # What the partner found and changed, in the lender's words, with the report beside it.
    findings = ui.locator("#findings tbody tr")
    city = findings.filter(has_text="City")
    expect(city).to_contain_text("Boston")
    expect(city).to_contain_text("New York")
    expect(city).to_contain_text("Changed")
    expect(findings.filter(has_text="Property usage")).to_contain_text("Primary residence")
    expect(ui.locator("#documents")).to_contain_text(".pdf")
    # The partner's reference, when and by whom; the platform's number only at the foot, for support.
    expect(ui.locator("#transaction-title")).to_have_text(re.compile(r"^Order AV-[0-9A-F]+$"))
    expect(ui.locator("#order-meta")).to_contain_text("by lender.demo")
    # Each step with the time it was reached, even on an order done in seconds.
    expect(ui.locator("li.step.done time.step-time")).to_have_count(4)
    # The result on top: the partner's word, the findings under the report's own column names, the report.
    expect(ui.locator("#result-title")).to_have_text("Completed")
    expect(ui.locator("#result-text")).to_contain_text("city")
    expect(ui.locator("#findings thead th")).to_have_text(list(FINDINGS_COLUMNS.values())[:3])
    expect(ui.locator("#documents").get_by_role("button", name=re.compile(r"^Open .*\.pdf$"))).to_be_visible()
    # The answer and its report without scrolling the host's panel; the field-by-field detail below.
    frame = page.frame(name="partner-panel")
    assert frame.evaluate("() => document.getElementById('documents').getBoundingClientRect().bottom") <= (
        frame.evaluate("() => window.innerHeight")
    )
    panel_shot("02-completed-with-findings")

    # A host without a document list of its own: the same report is downloaded instead.
    page.reload()
    expect(page.locator("#host-status")).to_contain_text("Ready", timeout=WAIT_MS)
    page.uncheck("#offers-open-resource")
    transaction_id = Order.objects.get().transaction_id
    page.locator(f"tr[data-transaction-id='{transaction_id}']").get_by_role("button").click()
    app_state(host.ui, "transaction")
    with page.expect_download(timeout=WAIT_MS) as downloading:
        host.ui.locator("#documents").get_by_role("button", name=re.compile(r"^Download .*\.pdf$")).click()
    assert Path(downloading.value.path()).read_bytes().startswith(b"%PDF")


def test_a_failed_order_says_what_happened_in_plain_words_and_follows_a_staff_retry(
    demo, service, page, panel_shot, settings
):
    from partner.fulfillment.models import FailureCode, Order, OrderStatus

    settings.UI_STAFF_POLL_SECONDS = 1  # a failed order is asked after at the slow pace: make it quick
    now = timezone.now()
    transaction, order = existing(
        demo,
        status=OrderStatus.FAILED,
        reference_number="AV-FAIL01",
        prepared_at=now,
        failed_at=now,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason="Gave up after retries: ServiceUnavailableError: PATCH http://svc/response - HTTP 500: {}",
    )
    # Uploaded for the response that never reached the service: not the lender's.
    order.attachments.create(
        delivery=result_of(order, "failed"),
        position=0,
        name="undelivered.pdf",
        mime_type="application/pdf",
        resource_id="r-1",
        uploaded_at=now,
    )
    page.set_viewport_size({"width": 400, "height": 900})
    host = open_existing(page, service, transaction.id)
    ui = host.ui
    expect(ui.locator("#app")).to_have_attribute("data-step", "failed", timeout=WAIT_MS)
    # The platform's outage is said to be one, not "a problem on the partner's side".
    expect(ui.locator("#failure-title")).to_have_text("The loan platform was unavailable")
    expect(ui.locator("#failure")).not_to_contain_text("partner's side")
    expect(ui.locator("#failure-next")).to_contain_text("You do not need to order again")
    expect(ui.locator("#failure-next")).to_contain_text("AV-FAIL01")
    # "Contact the partner": with whom and how, the respondingParty our responses name.
    contact = ui.locator("#failure .contact")
    expect(contact).to_be_visible()
    expect(contact).to_contain_text(settings.PARTNER_NAME)
    expect(contact.get_by_role("link", name=settings.PARTNER_PHONE)).to_have_attribute(
        "href", f"tel:{settings.PARTNER_PHONE}"
    )
    expect(contact.get_by_role("link", name=settings.PARTNER_EMAIL)).to_have_attribute(
        "href", f"mailto:{settings.PARTNER_EMAIL}"
    )
    expect(ui.locator("#failure")).not_to_contain_text("HTTP")
    expect(ui.locator("#failure")).not_to_contain_text("Error")
    # The steps reached stay shown; the undelivered report is not offered.
    expect(ui.locator("li.step.done")).to_have_count(2)
    expect(ui.locator("#documents")).not_to_contain_text("undelivered.pdf")
    assert no_overflow(page)
    panel_shot("03-failed-platform-outage", ui.locator("#transaction"))
    # A failed order without a reference makes no promise of one (and its sentences end once).
    Order.objects.filter(pk=order.pk).update(reference_number="", updated_at=timezone.now())
    expect(ui.locator("#transaction-title")).to_have_text("Your order", timeout=WAIT_MS)
    expect(ui.locator("#order-meta")).to_contain_text("by ")
    expect(ui.locator("#order-meta")).not_to_contain_text("reference")
    assert ".." not in ui.locator("#order-meta").inner_text()

    # Staff send it through again and it completes: the open panel shows it without a reload.
    done = timezone.now()
    Order.objects.filter(pk=order.pk).update(
        status=OrderStatus.REQUEST_COMPLETED, delivered_at=done, completed_at=done, updated_at=done
    )
    expect(ui.locator("#app")).to_have_attribute("data-step", "completed", timeout=WAIT_MS)
    expect(ui.locator("#failure")).to_be_hidden()
    expect(ui.locator("#documents")).to_contain_text("undelivered.pdf")  # delivered now
    panel_shot("04-completed-after-staff-retry", ui.locator("#transaction"))


def test_a_failure_in_the_lenders_data_says_what_to_correct(demo, service, page, panel_shot):
    from partner.fulfillment.models import FailureCode, OrderStatus

    transaction, _ = existing(
        demo,
        status=OrderStatus.FAILED,
        failure_code=FailureCode.CREDENTIALS_INVALID,
        failure_reason="The password is not the one the partner gave you.",
    )
    ui = open_existing(page, service, transaction.id).ui
    expect(ui.locator("#app")).to_have_attribute("data-step", "failed", timeout=WAIT_MS)
    expect(ui.locator("#failure-title")).to_have_text("Your partner credentials were not accepted")
    expect(ui.locator("#failure-reason")).to_have_text("The password is not the one the partner gave you.")
    expect(ui.locator("#failure-next")).to_contain_text("settings")
    expect(ui.locator("#failure .contact")).to_be_hidden()  # nothing here says to contact the partner
    panel_shot("05-failed-credentials", ui.locator("#transaction"))


def test_ordering_the_same_product_again_for_a_loan_is_asked_first(demo, service, page, host, panel_shot):
    from partner.fulfillment.models import OrderStatus

    transaction, _ = existing(demo, status=OrderStatus.REQUEST_COMPLETED, reference_number="AV-EARLY1")
    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    earlier = ui.locator("#earlier-orders li")
    expect(earlier).to_have_count(1)
    expect(earlier).to_contain_text("AV-EARLY1")
    expect(earlier).to_contain_text("Completed")
    expect(earlier).to_contain_text("by lender.demo")
    panel_shot("06-earlier-orders")

    # Placing the order without saying so is stopped next to the question.
    ui.locator("#order-submit").click()
    expect(ui.locator("#order-again-error")).to_contain_text("already has an order")
    expect(ui.locator("#order-again")).to_be_focused()
    app_state(ui, "order")
    assert '"functionName":"create"' not in host.log_text()  # nothing was ordered
    panel_shot("07-asked-before-ordering-again")

    # The earlier order opens in the panel.
    earlier.get_by_role("button", name="View order AV-EARLY1").click()
    app_state(ui, "transaction")
    expect(ui.locator("#transaction-id")).to_have_text(transaction.id)
    expect(ui.locator("#app")).to_have_attribute("data-step", "completed", timeout=WAIT_MS)


def test_ordering_again_once_confirmed(demo, service, page, host):
    from partner.fulfillment.models import OrderStatus

    existing(demo, status=OrderStatus.REQUEST_COMPLETED, reference_number="AV-EARLY2")
    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    ui.locator("#order-again").check()
    ui.locator("#order-submit").click()
    app_state(ui, "transaction")


def test_an_expired_panel_session_is_renewed_with_the_origin(demo, service, page, settings):
    from partner.fulfillment.models import OrderStatus

    settings.UI_PANEL_SESSION_SECONDS = 2  # the polls outlive it quickly
    transaction, _ = existing(demo, status=OrderStatus.IN_PROGRESS)
    host = open_existing(page, service, transaction.id)
    expect(page.locator("#log")).to_contain_text("refreshOrigin", timeout=WAIT_MS)
    # A poll after the session ran out is answered (the panel renewed its session with the origin).
    with page.expect_response(
        lambda response: "/ui/transactions/" in response.url and response.status == 200, timeout=WAIT_MS
    ):
        pass
    expect(host.ui.locator("#progress-note")).to_be_hidden()
    expect(host.ui.locator("#problem")).to_be_hidden()
    expect(host.ui.locator("#app")).to_have_attribute("data-step", "in_progress")


def test_focus_moved_by_the_page_draws_no_box_but_the_keyboards_does(demo, service, page, panel_shot):
    from partner.fulfillment.models import OrderStatus

    transaction, _ = existing(demo, status=OrderStatus.IN_PROGRESS)
    ui = open_existing(page, service, transaction.id).ui  # opened with a click
    title = ui.locator("#transaction-title")
    expect(title).to_be_focused()
    assert title.evaluate("(node) => getComputedStyle(node).outlineStyle") == "none"
    panel_shot("08-focus-after-click", ui.locator("#transaction"))
    page.keyboard.press("Tab")
    close = ui.locator("#close-button")
    for _ in range(10):
        if close.evaluate("(node) => node === document.activeElement"):
            break
        page.keyboard.press("Tab")
    expect(close).to_be_focused()
    assert close.evaluate("(node) => getComputedStyle(node).outlineStyle") == "solid"


@pytest.mark.parametrize("view", ["form", "findings"])
def test_nothing_overflows_at_320_px(demo, service, page, host, panel_shot, view):
    from partner.fulfillment.models import OrderStatus

    long = "A-very-long-unbroken-value-" * 4
    findings = [{"field": "streetAddress", "label": "Street address", "before": long, "after": long, "changed": False}]
    now = timezone.now()
    transaction, _ = existing(
        demo,
        status=OrderStatus.REQUEST_COMPLETED,
        reference_number="AV-NARROW",
        findings=findings,
        delivered_at=now,
        completed_at=now,
        prepared_at=now,
    )
    page.set_viewport_size({"width": 320, "height": 900})
    if view == "form":
        ui = host.open().launch_new()
        app_state(ui, "order")
        expect(ui.locator("#earlier-orders li")).to_have_count(1)
    else:
        ui = open_existing(page, service, transaction.id).ui
        expect(ui.locator("#findings-block")).to_be_visible(timeout=WAIT_MS)
    assert page.frame(name="partner-panel").evaluate("() => document.documentElement.clientWidth") <= 320
    assert no_overflow(page)
    panel_shot(f"09-320px-{view}", page.locator("iframe[name=partner-panel]"))


def test_the_lender_sees_the_result_first_and_the_updates_newest_first_below(
    demo, service, page, panel_shot, settings, monkeypatch, tasks_sent
):
    from partner.sandbox.transactions import transaction_create
    from tests.helpers.fakes import FakePlatform
    from tests.helpers.staff_orders import Worker, staff_order, staff_product_name

    fake = FakePlatform().install(monkeypatch)  # the order's own calls; the origin still goes to the sandbox
    product = staff_product_name(demo)
    transaction = transaction_create(
        product=demo.products[product], user=demo.users["lender.demo"], loan=demo.loans[0], send_webhook=False
    )
    order = staff_order(fake, transaction_id=transaction.id, product_name=product)
    work = Worker(order)
    work.update("Inspection booked for Tuesday")
    work.attach("draft-report.pdf")
    work.deliver("Draft report attached")
    work.update("Inspector on site: interior and exterior photographed")
    work.attach("appraisal-report.pdf")
    work.deliver("Appraised value $450,000; property in good condition", final=True)
    work.send()

    host = open_existing(page, service, transaction.id)
    ui = host.ui
    expect(ui.locator("#timeline > li")).to_have_count(5, timeout=WAIT_MS)
    order.refresh_from_db()

    # On top: the order by our reference, where it stands, the partner's answer and its documents.
    expect(ui.locator("#transaction-title")).to_have_text(f"Order {order.reference_number}")
    expect(ui.locator("#result-title")).to_have_text(re.compile(r"^(Delivered|Completed)$"))
    expect(ui.locator("#result-text")).to_have_text("Appraised value $450,000; property in good condition")
    documents = ui.locator("#documents > li")
    expect(documents).to_have_count(2)
    expect(documents.first).to_contain_text("appraisal-report.pdf")  # the latest delivery's first
    # One behaviour for a staff product's documents too: into the host's document list.
    documents.first.get_by_role("button", name="Open appraisal-report.pdf").click()
    expect(page.locator("#documents li")).to_contain_text("appraisal-report.pdf", timeout=WAIT_MS)

    # Below it, everything the partner sent, newest first.
    expect(ui.locator("#timeline > li h4")).to_have_text(
        ["Final delivery", "Status update", "Partial delivery", "Status update", "Order received"]
    )
    # The answer is seen without scrolling the panel's frame; the loan and the history come after it.
    frame = page.frame(name="partner-panel")
    tops = frame.evaluate(
        """() => Object.fromEntries(["result", "timeline-block", "loan"].map(
             (id) => [id, document.getElementById(id).getBoundingClientRect()]))"""
    )
    assert frame.evaluate("() => window.scrollY") == 0
    assert tops["result"]["bottom"] <= frame.evaluate("() => window.innerHeight")
    assert tops["result"]["top"] < tops["timeline-block"]["top"] < tops["loan"]["top"]

    # The service's transaction id once, labelled for support; our reference is what people read.
    expect(ui.locator("#support")).to_have_text(f"Transaction ID (for support): {transaction.id}")
    assert ui.locator("#transaction").inner_text().count(transaction.id) == 1
    panel_shot("06-result-first", page.locator("iframe[name=partner-panel]"))
    panel_shot("07-result-first-whole-page")
