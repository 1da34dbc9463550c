"""The embedded UI in a real browser: the sandbox host page frames it, as the loan application would.

Chromium (Debian's) through Playwright, against the live server and its sandbox.
Every state under test is saved as a screenshot in test-artifacts/ui/.
"""

import re

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import WAIT_MS, Host, app_state

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


def order_placed(host: Host) -> str:
    """Place an order from the open form; return the transaction id shown."""
    ui = host.ui
    ui.locator("#option-comments").fill("Please check the county too.")
    ui.locator("#order-submit").click()
    app_state(ui, "transaction")
    text = ui.locator("#transaction-id").inner_text()
    return text.rsplit(" ", 1)[-1]


@pytest.mark.worker
@pytest.mark.usefixtures("celery_worker_live")
def test_new_order_reaches_completed_with_the_pdf(demo, service, page, host, shot):
    from partner.fulfillment.orders.selectors import order_view

    host.open()
    shot("01-host-page", page)
    ui = host.launch_new()
    app_state(ui, "order")
    expect(ui.locator("#loan-summary")).to_contain_text("Borrower")
    expect(ui.locator("#title")).not_to_have_text("Partner order")
    shot("02-new-order-form")

    transaction_id = order_placed(host)
    assert transaction_id
    expect(ui.locator("#steps")).to_be_visible()
    shot("03-transaction-requested")

    expect(ui.locator("#app")).to_have_attribute("data-step", "completed", timeout=90_000)
    expect(ui.locator("#documents")).to_contain_text(".pdf")
    expect(ui.locator("li.step.done")).to_have_count(4)
    expect(ui.locator("#announce")).to_contain_text("Completed")
    shot("04-transaction-completed")

    view = order_view(transaction_id)
    assert view["step"] == "completed"
    assert any(item["mime_type"] == "application/pdf" for item in view["attachments"])

    # The document opens through the host, which serves the uploaded PDF.
    ui.get_by_role("button", name=re.compile(r"^Open .*\.pdf$")).first.click()
    link = page.locator("#documents a").first
    expect(link).to_be_visible(timeout=WAIT_MS)
    response = page.request.get(link.evaluate("(a) => a.href"))
    assert response.ok
    assert response.body().startswith(b"%PDF")
    shot("05-document-opened", page)

    log = host.log_text()
    for expected in ("guest:ready", "object:get", "getOrigin", "create"):
        assert expected in log
    # The partner access token travelled in headers only, never in an address.
    assert not [url for url in page.requested_urls if "partnerAccessToken" in url]


def test_existing_transaction_opens_its_view(demo, service, page, host, shot):
    from partner.sandbox.transactions import transaction_create

    transaction = transaction_create(
        product=demo.products["address-verification"],
        user=demo.users["lender.demo"],
        loan=demo.loans[0],
        send_webhook=False,
    )
    host.open()
    row = page.locator(f"tr[data-transaction-id='{transaction.id}']")
    expect(row).to_be_visible()
    row.get_by_role("button").click()

    ui = host.ui
    app_state(ui, "transaction")
    expect(ui.locator("#transaction-id")).to_contain_text(transaction.id)
    # No webhook reached us, so nothing is in progress yet: the order is requested.
    expect(ui.locator("#app")).to_have_attribute("data-step", "requested")
    expect(ui.locator("li.step[data-step=requested]")).to_have_attribute("aria-current", "step")
    expect(ui.locator("#loan-summary")).to_be_visible()
    shot("06-existing-transaction")


def test_failed_transaction_shows_the_reason(demo, service, page, host, shot):
    from partner.fulfillment.models import FailureCode, Order, OrderStatus
    from partner.sandbox.transactions import transaction_create

    transaction = transaction_create(
        product=demo.products["address-verification"],
        user=demo.users["lender.demo"],
        loan=demo.loans[0],
        send_webhook=False,
    )
    Order.objects.create(
        transaction_id=transaction.id,
        product_name="address-verification",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.ORDER_REFUSED,  # the loan's data: the lender reads the reason
        failure_reason="The ZIP code <b>00000</b> is not a US ZIP code.",
    )
    host.open()
    page.locator(f"tr[data-transaction-id='{transaction.id}']").get_by_role("button").click()

    ui = host.ui
    expect(ui.locator("#app")).to_have_attribute("data-step", "failed", timeout=WAIT_MS)
    # The reason is shown as text, never as markup.
    expect(ui.locator("#failure-reason")).to_have_text("The ZIP code <b>00000</b> is not a US ZIP code.")
    expect(ui.locator("#failure b")).to_have_count(0)
    expect(ui.locator("li.step[data-step=failed]")).to_have_attribute("aria-current", "step")
    expect(ui.locator("#announce")).to_contain_text("Failed")
    shot("14-transaction-failed")


def test_page_opened_outside_the_host_says_what_to_do(demo, service, page, shot):
    page.goto(f"{service.url}/", wait_until="domcontentloaded")
    # At once: decided as the page's script starts, before anything is asked of a host (no host timeout).
    assert page.locator("#app").get_attribute("data-state") == "problem"
    expect(page.locator("#problem-title")).to_have_text("Open this page from the loan application")
    expect(page.locator("#problem-next")).to_contain_text("open the loan")
    # A local run: the sandbox's host page, as a link that opens it.
    link = page.locator("#problem-next a")
    expect(link).to_have_attribute("href", "/sandbox/host/")
    link.click()
    expect(page.locator("#host-status")).to_contain_text("Ready", timeout=WAIT_MS)
    page.go_back()
    expect(page.locator("#problem-retry")).to_be_hidden()  # no retry can work outside the host
    shot("15-outside-the-host")


def test_expired_origin_is_renewed_without_the_lender_noticing(demo, service, page, host, shot):
    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    first_origin = page.locator("#origin-info").inner_text()

    page.click("#expire-origin")
    expect(page.locator("#log")).to_contain_text("expired on demand")
    shot("07-origin-expired", page)

    # The order check meets the expired origin (401), the page renews it and goes on.
    transaction_id = order_placed(host)
    assert transaction_id
    log = host.log_text()
    assert "refreshOrigin" in log
    assert page.locator("#origin-info").inner_text() != first_origin
    expect(ui.locator("#problem")).to_be_hidden()
    expect(ui.locator("#order-error")).to_be_hidden()
    shot("08-origin-renewed")

    # The transaction view polls with its panel session, not the origin: an origin expiring now
    # changes nothing for the polls (they never show it to the service).
    page.click("#expire-origin")
    expect(page.locator("#log")).to_contain_text("expired on demand")
    # The next poll (every 3 s) is answered.
    page.wait_for_event("response", lambda answer: "/ui/transactions/" in answer.url and answer.ok, timeout=WAIT_MS)
    expect(ui.locator("#progress-note")).to_be_hidden()
    expect(ui.locator("#problem")).to_be_hidden()
    app_state(ui, "transaction")


def test_origin_is_renewed_before_it_expires(demo, service, page, host, settings):
    settings.UI_ORIGIN_REFRESH_AFTER = 1  # seconds instead of 240
    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    first_origin = page.locator("#origin-info").inner_text()
    # No request met an expired origin: the page renewed it on its own schedule.
    expect(page.locator("#log")).to_contain_text("refreshOrigin", timeout=WAIT_MS)
    expect(page.locator("#origin-info")).not_to_have_text(first_origin)
    order_placed(host)


@pytest.mark.parametrize(
    ("user", "title"),
    [
        ("lender.wrong", "Your partner credentials were not accepted"),
        ("lender.nocreds", "No partner credentials are set up for this product"),  # none: not "wrong"
    ],
)
def test_invalid_credentials_are_shown_clearly(demo, service, page, host, shot, user, title):
    host.open()
    ui = host.launch_new(user=user)
    app_state(ui, "problem")
    expect(ui.locator("#problem-title")).to_have_text(title)
    expect(ui.locator("#problem-next")).to_contain_text("administrator")
    expect(ui.locator("#problem-next")).to_contain_text("user name and password")
    expect(ui.locator("#app")).not_to_contain_text("username")
    # The page is the product's, in its heading and its title, even when refused.
    expect(ui.locator("#title")).to_have_text("Address Verification")
    assert page.frame(name="partner-panel").title() == "Address Verification"
    # Trying again would send the same credentials: no button, only what to change.
    expect(ui.locator("#problem-retry")).to_be_hidden()
    expect(ui.locator("#order")).to_be_hidden()
    # Focus moves to the message so a screen reader reads it at once.
    expect(ui.locator("#problem-title")).to_be_focused()
    shot(f"09-invalid-credentials-{user}")


def test_keyboard_only_ordering(demo, service, page, host, shot):
    host.open()
    host.choose("user", "lender.demo")
    host.choose("product", "Address")
    page.focus("#open-new")
    page.keyboard.press("Enter")
    ui = host.ui
    app_state(ui, "order")

    # From the host's button, Tab walks through the host's controls into the panel's form.
    for _ in range(15):
        page.keyboard.press("Tab")
        if ui.locator("#option-comments").evaluate("(node) => node === document.activeElement"):
            break
    expect(ui.locator("#option-comments")).to_be_focused()
    page.keyboard.type("Ordered with the keyboard")
    page.keyboard.press("Tab")
    expect(ui.locator("#order-submit")).to_be_focused()
    shot("10-keyboard-focus-on-submit")
    page.keyboard.press("Enter")
    app_state(ui, "transaction")
    # Focus follows the lender to the order's progress.
    expect(ui.locator("#transaction-title")).to_be_focused()
    shot("11-keyboard-ordered")


def test_too_long_note_is_refused_with_a_message(demo, service, page, host, shot):
    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    # The browser stops typing at maxlength; remove it to send more, as a script could.
    ui.locator("#option-comments").evaluate("(node) => node.removeAttribute('maxlength')")
    ui.locator("#option-comments").fill("x" * 501)
    ui.locator("#order-submit").click()
    expect(ui.locator("#option-comments-error")).to_contain_text("at most 500")
    expect(ui.locator("#option-comments")).to_have_attribute("aria-invalid", "true")
    expect(ui.locator("#option-comments")).to_be_focused()
    app_state(ui, "order")
    shot("12-validation-error")


def test_narrow_panel_has_no_horizontal_scroll(demo, service, page, host, shot):
    page.set_viewport_size({"width": 400, "height": 900})
    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    frame = page.frame(name="partner-panel")
    assert frame.evaluate("() => document.documentElement.clientWidth") <= 400
    overflow = frame.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    shot("13-narrow-panel", page.locator("iframe[name=partner-panel]"))


def test_host_frames_only_the_partner_ui_origin(demo, service, page, host):
    from playwright.sync_api import Error

    host.open()
    ui = host.launch_new()
    app_state(ui, "order")
    # The same page on another origin (127.0.0.1 instead of localhost) may not be loaded in the panel.
    other = service.url.replace("localhost", "127.0.0.1")
    assert other != service.url
    with pytest.raises(Error, match="ERR_BLOCKED_BY_CSP"):
        page.frame(name="partner-panel").goto(f"{other}/")
    assert host.log_text().count('"functionName":"getOrigin"') == 1  # nobody else was handed an origin


def test_loan_data_is_shown_as_text_never_as_markup(demo, service, page, host, shot):
    from partner.sandbox.models import Loan

    data = dict(demo.loans[0].data)
    data["loanNumber"] = "XSS-0001"
    data["borrower"] = {"firstName": '<img src=x onerror="document.body.dataset.pwned=1">', "lastName": "<b>Bold</b>"}
    data["property"] = dict(data["property"], streetAddress="<script>document.body.dataset.pwned=1</script>1 Main")
    Loan.objects.create(instance=demo.instance, guid="xss-loan-guid-0001", data=data)

    host.open()
    ui = host.launch_new(loan="XSS-0001")
    app_state(ui, "order")
    summary = ui.locator("#loan-summary")
    expect(summary).to_contain_text('<img src=x onerror="document.body.dataset.pwned=1"> <b>Bold</b>')
    expect(summary).to_contain_text("<script>document.body.dataset.pwned=1</script>1 Main")
    expect(summary.locator("img, b, script")).to_have_count(0)
    assert page.frame(name="partner-panel").evaluate("() => document.body.dataset.pwned") is None
    shot("17-loan-data-escaped")


def test_staff_worked_order_shows_its_timeline_and_downloads_a_document(
    demo, service, page, host, shot, settings, monkeypatch, tasks_sent
):
    from pathlib import Path

    from partner.sandbox.transactions import transaction_create
    from tests.helpers.fakes import FakePlatform
    from tests.helpers.staff_orders import PDF, Worker, staff_order, staff_product_name

    settings.UI_STAFF_POLL_SECONDS = 1  # the page asks every second while the order is with staff
    fake = FakePlatform().install(monkeypatch)  # the order's own calls; the origin still goes to the sandbox
    product = staff_product_name(demo)
    transaction = transaction_create(
        product=demo.products[product], user=demo.users["lender.demo"], loan=demo.loans[0], send_webhook=False
    )
    work = Worker(staff_order(fake, transaction_id=transaction.id, product_name=product))
    work.update("Inspection booked for Tuesday")
    work.attach("draft.pdf")
    work.deliver("Draft report attached")
    work.attach("waiting.pdf")  # not delivered: never shown
    work.send()

    page.set_viewport_size({"width": 320, "height": 900})
    host.open()
    page.uncheck("#offers-open-resource")  # a host without a document list: the panel downloads
    page.locator(f"tr[data-transaction-id='{transaction.id}']").get_by_role("button").click()
    ui = host.ui
    app_state(ui, "transaction")
    entries = ui.locator("#timeline > li")
    expect(entries).to_have_count(3, timeout=WAIT_MS)
    expect(entries.locator("h4")).to_have_text(["Partial delivery", "Status update", "Order received"])  # newest first
    expect(entries.nth(1)).to_contain_text("Inspection booked for Tuesday")
    expect(entries.nth(1).locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT"))
    expect(ui.locator("#due")).to_contain_text("Expected by")
    expect(ui.locator("#result-text")).to_have_text("Draft report attached")  # the latest word, on top
    expect(ui.locator("#documents")).to_contain_text("draft.pdf")
    expect(ui.locator("#documents")).not_to_contain_text("waiting.pdf")
    expect(ui.locator("#timeline")).not_to_contain_text("waiting.pdf")
    expect(ui.locator("#timeline")).to_have_attribute("aria-live", "polite")
    frame = page.frame(name="partner-panel")
    assert frame.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    shot("18-staff-timeline-320px", ui.locator("#transaction"))

    # The document comes with the origin headers, then is saved from a Blob URL: no token in any address.
    with page.expect_download(timeout=WAIT_MS) as downloading:
        ui.locator("#documents").get_by_role("button", name="Download draft.pdf").click()
    assert downloading.value.suggested_filename == "draft.pdf"
    assert Path(downloading.value.path()).read_bytes() == PDF
    assert not [url for url in page.requested_urls if "partnerAccessToken" in url]

    # A new update appears on its own, and the order ends declined with the reason.
    work.update("Inspector on the way")
    work.decline("The property is outside our area")
    work.send()
    expect(ui.locator("#app")).to_have_attribute("data-step", "declined", timeout=WAIT_MS)
    expect(entries).to_have_count(5)
    expect(entries.first.locator("h4")).to_have_text("Declined")
    expect(ui.locator("#declined-reason")).to_have_text("The property is outside our area")
    expect(ui.locator("#due")).to_be_hidden()
    expect(ui.locator("#announce")).to_contain_text("Declined")
    shot("19-staff-declined-320px", ui.locator("#transaction"))
