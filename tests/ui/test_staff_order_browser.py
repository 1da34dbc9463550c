"""A staff-worked order's whole life in a real browser: the lender orders, staff work it in the admin.

Two browser contexts side by side, as two people would be: the lender in the sandbox's host page
(our panel in its iframe) and a staff member signed in to the admin's "Orders to work". A real
Celery worker sends what staff store (each delivery is a PATCH to the sandbox, whose callbacks
come back as webhooks), and after each action the lender's panel, polling on its own, shows it.
Each stage is saved as a screenshot in test-artifacts/ui/staff-order/: among them the appraisal's typed
delivery form (06-staff-appraisal-form) and the confirmation of the final delivery (06-staff-final-confirmation).
"""

import re

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import ARTIFACTS, WAIT_MS, app_state
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = ARTIFACTS / "staff-order"
STAFF_USERNAME = "appraiser.browser"
STAFF_PASSWORD = "Tuesday-inspection-2026"  # noqa: S105 - a test login's password
SENT_MS = 60_000  # a delivery is stored, picked up by the worker, PATCHed and polled by the panel
KIND_LABELS = {"Partial": "Send what is ready now", "Final": "Final delivery"}  # the form's choices
APPRAISAL = {
    "value": "812000",
    "value_shown": "$812,000",
    "date": "2026-11-20",
    "date_shown": "November 20, 2026",
    "condition": "C3",
    "comments": "Three close sales within a mile support the value.",
}


def pdf_document(text: str) -> bytes:
    """A small, valid one-page PDF showing `text` (objects, cross-reference table and trailer)."""
    content = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    document = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(document))
        document += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(document)
    document += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    document += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    document += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(document)


DRAFT = pdf_document("Draft appraisal report")
FINAL = pdf_document("Final appraisal report")


def screenshot(name: str, target) -> None:
    """Save a screenshot of a page (whole) or an element under test-artifacts/ui/staff-order/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    if hasattr(target, "goto"):
        target.screenshot(path=str(path), full_page=True)
    else:
        target.screenshot(path=str(path))
    print(f"screenshot: {path}")


def panel_screenshot(name: str, page) -> None:
    """The lender's panel, whole: the host's iframe stretched to its content first (it scrolls at 900 px)."""
    content = page.frame(name="partner-panel").evaluate("() => document.documentElement.scrollHeight")
    frame = page.locator("iframe[name=partner-panel]")
    frame.evaluate("(node, height) => { node.style.height = height + 'px'; }", max(content + 4, 900))
    screenshot(name, frame)


def fits_its_column(locator) -> bool:
    """The element ends within its parent (a wide table would run under the column beside it)."""
    return locator.evaluate(
        "(node) => node.getBoundingClientRect().right <= node.parentElement.getBoundingClientRect().right + 1"
    )


def delivery_sent(transaction_id: str, kind: str):
    """Wait until the worker has sent the order's delivery of `kind` (the service accepted the PATCH)."""
    from partner.fulfillment.models import Delivery, DeliveryState

    def sent():
        delivery = Delivery.objects.filter(order__transaction_id=transaction_id, kind=kind).first()
        if delivery is not None and delivery.state == DeliveryState.FAILED:
            pytest.fail(f"the {kind} delivery failed: {delivery.failure_reason}")
        return delivery if delivery and delivery.state in (DeliveryState.SENT, DeliveryState.CONFIRMED) else None

    return wait_for(sent, timeout=SENT_MS / 1000, message=f"the {kind} delivery to be sent")


def results_shown(ui, appraisal: dict) -> None:
    """The lender's panel shows the appraisal's figures in the form's words, before the documents."""
    results = ui.locator("#results-block")
    expect(results).to_be_visible(timeout=WAIT_MS)
    expect(results.locator("h4")).to_have_text("Appraisal")
    for label, text in (
        ("Appraised value", appraisal["value_shown"]),
        ("Effective date", appraisal["date_shown"]),
        ("Condition", "C3: well maintained, normal wear"),
    ):
        expect(results.locator(".results-value", has=ui.locator("dt", has_text=label)).locator("dd")).to_have_text(text)
    first = "(node) => node.compareDocumentPosition(document.getElementById('documents-block')) & 4"
    assert results.evaluate(first), "the results come before the documents"


class Admin:
    """The staff member's browser: the admin's login form, the queue and one order's page."""

    def __init__(self, page, base_url: str):
        self.page = page
        self.base_url = base_url

    def sign_in(self, username: str, password: str):
        self.page.goto(f"{self.base_url}/admin/login/?next=/admin/fulfillment/stafforder/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Log in").click()
        expect(self.page.get_by_role("heading", name="Orders to work")).to_be_visible(timeout=WAIT_MS)

    def open_order(self, *, search: str, reference: str):
        self.page.get_by_role("textbox", name="Search").fill(search)
        self.page.get_by_role("button", name="Search").click()
        self.page.locator("#result_list").get_by_role("link", name=reference, exact=True).click()
        expect(self.page.get_by_role("heading", name=f"Order {reference}")).to_be_visible(timeout=WAIT_MS)

    def said(self, text: str):
        """The admin's message after a POST (POST/redirect/GET) says `text`."""
        expect(self.page.locator("ul.messagelist")).to_contain_text(text, timeout=WAIT_MS)

    def section(self, section_id: str):
        return self.page.locator(f"#{section_id}")

    def attach(self, name: str, content: bytes):
        form = self.section("upload-form")
        form.get_by_label("Documents").set_input_files({"name": name, "mimeType": "application/pdf", "buffer": content})
        form.get_by_role("button", name="Attach").click()
        self.said(f"Attached {name}.")

    def deliver(self, kind: str, status: str, *, appraisal: dict | None = None, shots: str = ""):
        """A delivery as staff make it: the kind, the status, the appraisal's typed inputs; a final one
        is shown on its confirmation page first, then sent from there."""
        form = self.section("delivery")
        form.get_by_role("radio", name=re.compile(rf"^{KIND_LABELS[kind]}")).check()
        form.get_by_label("Status for the lender").fill(status)
        if appraisal:
            form.get_by_label("Appraised value").fill(appraisal["value"])
            form.get_by_label("Effective date").fill(appraisal["date"])
            form.get_by_label("Condition").select_option(appraisal["condition"])
            form.get_by_label("Comments").fill(appraisal["comments"])
            screenshot(f"{shots}-staff-appraisal-form", form)
        form.get_by_role("button", name="Deliver…").click()
        if kind == "Final":
            summary = self.section("confirm-summary")
            expect(self.page.locator("#confirm-warning")).to_contain_text("This cannot be undone", timeout=WAIT_MS)
            screenshot(f"{shots}-staff-final-confirmation", self.page)
            if appraisal:
                for shown in (
                    "Appraised value",
                    appraisal["value_shown"],
                    appraisal["date_shown"],
                    "C3: well maintained",
                ):
                    expect(summary).to_contain_text(shown)
            self.page.get_by_role("button", name="Send the final delivery").click()
            self.said("Final delivery stored with 1 document(s)")
        else:
            self.said("Delivery stored with 1 document(s)")


@pytest.mark.usefixtures("celery_worker_live")
def test_a_staff_worked_appraisal_from_order_to_completion(demo, service, browser, page, host, settings):
    from partner.core.staff_accounts import staff_account_set
    from partner.fulfillment.models import DeliveryKind, DeliveryState, Order, OrderStatus

    # The page reads both at render: it asks every second, not every 15 s, while staff work the order.
    settings.UI_STAFF_POLL_SECONDS = 1
    settings.UI_PROGRESS_POLL_SECONDS = 1
    staff_account_set(username=STAFF_USERNAME, password=STAFF_PASSWORD)

    # (1) The lender orders an appraisal from the host page.
    host.open()
    ui = host.launch_new(user="lender.demo", loan="DEMO-1001", product="Residential appraisal")
    app_state(ui, "order")
    expect(ui.locator("#title")).to_have_text("Residential appraisal")
    ui.get_by_label("Notes for the order").fill("Gate code 4711; call the borrower before the visit.")
    ui.get_by_role("button", name="Place order").click()
    app_state(ui, "transaction")
    transaction_id = ui.locator("#transaction-id").inner_text().rsplit(" ", 1)[-1]
    entries = ui.locator("#timeline > li")
    expect(entries.locator("h4")).to_have_text(["Order received"], timeout=SENT_MS)
    expect(ui.locator("#app")).to_have_attribute("data-step", "in_progress")
    panel_screenshot("01-lender-order-received", page)

    order = Order.objects.get(transaction_id=transaction_id)
    assert (order.status, order.staff_worked) == (OrderStatus.WITH_STAFF, True)
    assert order.reference_number

    # (2) Staff sign in with the login form, find the order in the queue and take it.
    staff_context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        admin = Admin(staff_context.new_page(), service.url)
        admin.sign_in(STAFF_USERNAME, STAFF_PASSWORD)
        admin.open_order(search=transaction_id, reference=order.reference_number)
        expect(admin.section("order-request")).to_contain_text("Gate code 4711")
        expect(admin.section("order-request")).to_contain_text("Street address")  # the staff's words
        expect(admin.section("order-request")).not_to_contain_text("streetAddress")
        admin.page.get_by_role("button", name="Take", exact=True).click()
        admin.said("You work this order now.")
        expect(admin.page.locator("#assigned-to")).to_have_text(STAFF_USERNAME)
        screenshot("02-staff-order-taken", admin.page)

        # A status update.
        status = admin.section("status-update")
        status.get_by_label("Status for the lender").fill("Inspection booked for Tuesday")
        status.get_by_role("button", name="Post the status update").click()
        admin.said("Status update stored")
        delivery_sent(transaction_id, DeliveryKind.STATUS_UPDATE)
        expect(entries.locator("h4")).to_have_text(["Status update", "Order received"], timeout=SENT_MS)
        expect(entries.nth(0)).to_contain_text("Inspection booked for Tuesday")  # the panel's newest first
        admin.page.reload()
        expect(admin.section("order-timeline")).to_contain_text("Inspection booked for Tuesday")
        assert fits_its_column(admin.section("order-timeline").locator("table"))
        # "system" in the Who column stays one word (it wrapped as "syste m" when every cell could break).
        who = admin.section("order-timeline").locator("td.staff-who", has_text="system").first
        assert who.evaluate("(cell) => getComputedStyle(cell).whiteSpace") == "nowrap"
        assert who.evaluate("(cell) => cell.scrollWidth <= cell.clientWidth")  # whole, not cut
        # ... and the detail keeps a column wide enough for words (not one letter per line).
        detail = admin.section("order-timeline").locator("td.staff-detail").first
        assert detail.evaluate("(cell) => cell.getBoundingClientRect().width > cell.closest('table').clientWidth / 4")
        screenshot("03-staff-status-update-posted", admin.page)
        panel_screenshot("04-lender-status-update", page)

        # A partial delivery with the draft report.
        admin.attach("draft-report.pdf", DRAFT)
        admin.deliver("Partial", "Draft report attached")
        delivery_sent(transaction_id, DeliveryKind.PARTIAL)
        expect(entries.locator("h4")).to_have_text(
            ["Partial delivery", "Status update", "Order received"], timeout=SENT_MS
        )
        expect(entries.nth(0)).to_contain_text("Draft report attached")
        expect(entries.nth(0).get_by_role("button", name="Open draft-report.pdf")).to_be_visible()
        expect(ui.locator("#app")).to_have_attribute("data-step", "in_progress")
        panel_screenshot("05-lender-partial-delivery", page)

        # The final delivery with the appraisal report: the service's callback completes the order.
        admin.attach("appraisal-report.pdf", FINAL)
        admin.deliver("Final", "Appraisal complete", appraisal=APPRAISAL, shots="06")
        delivery_sent(transaction_id, DeliveryKind.FINAL)
        expect(ui.locator("#app")).to_have_attribute("data-step", "completed", timeout=SENT_MS)
        expect(entries.locator("h4")).to_have_text(
            ["Final delivery", "Partial delivery", "Status update", "Order received"]
        )
        expect(entries.nth(0)).to_contain_text("Appraisal complete")
        for name in ("draft-report.pdf", "appraisal-report.pdf"):  # in the result on top, into the host's list
            expect(ui.locator("#documents").get_by_role("button", name=f"Open {name}")).to_be_visible()
        expect(ui.locator("li.step.done")).to_have_count(4)
        expect(ui.locator("#announce")).to_contain_text("Completed")
        # The appraisal's figures, first, as the product's response form labels and writes them.
        results_shown(ui, APPRAISAL)
        expect(entries.nth(0).locator(".entry-values")).to_contain_text(f"Appraised value {APPRAISAL['value_shown']}")
        panel_screenshot("07-lender-completed", page)

        admin.page.reload()
        expect(admin.page.locator("#order-notice")).to_contain_text("nothing more can be sent")
        expect(admin.section("order-timeline")).to_contain_text("appraisal-report.pdf")
        assert fits_its_column(admin.section("order-timeline").locator("table"))
        screenshot("08-staff-order-completed", admin.page)
    finally:
        staff_context.close()

    # The lender opens the final report in the host's document list: the bytes staff uploaded.
    ui.locator("#documents").get_by_role("button", name="Open appraisal-report.pdf").click()
    link = page.locator("#documents a", has_text="appraisal-report.pdf")
    expect(link).to_be_visible(timeout=WAIT_MS)
    assert page.request.get(link.evaluate("(a) => a.href")).body() == FINAL

    assert not [message for message in page.console_messages if message.startswith("pageerror")]
    order.refresh_from_db()
    assert order.status == OrderStatus.REQUEST_COMPLETED
    final = order.deliveries.get(kind=DeliveryKind.FINAL)
    assert final.state == DeliveryState.CONFIRMED
    assert final.loan["appraisal"] == {
        "appraisedValue": 812000,
        "effectiveDate": "2026-11-20",
        "condition": "C3",
        "comments": APPRAISAL["comments"],
    }
    assert sorted(order.attachments.values_list("name", flat=True)) == ["appraisal-report.pdf", "draft-report.pdf"]
