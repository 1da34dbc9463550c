"""The appraisal's figures in the lender's panel when the partner's own system delivers them through
the connector's API (`/api/v1/`), in a real browser with a real worker: the lender orders in the
sandbox's host page, a test client of the API (OAuth client credentials, as a partner's system) posts
the final delivery with the appraisal, and the panel, polling on its own, shows the values labelled
and written as the product's response form says. Screenshot: test-artifacts/ui/api-delivery/.
The same figures from a staff delivery: `test_staff_order_browser.py`."""

import uuid

import pytest
from playwright.sync_api import expect

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.catalog.services import product_fulfiller_set
from partner.connector.services import connection_create
from partner.fulfillment.models import DeliveryKind, OrderStatus
from tests.helpers.browser import ARTIFACTS, app_state
from tests.helpers.connector import PDF, ApiClient
from tests.helpers.orders import order_of
from tests.ui.test_staff_order_browser import SENT_MS, delivery_sent, panel_screenshot, results_shown

pytestmark = [pytest.mark.browser, pytest.mark.worker, pytest.mark.django_db(transaction=True)]

APPRAISAL = {
    "value_shown": "$455,000",
    "date_shown": "November 27, 2026",
}


@pytest.mark.usefixtures("celery_worker_live")
def test_an_appraisal_delivered_through_the_api_shows_its_figures_to_the_lender(
    demo, service, page, host, settings, monkeypatch
):
    settings.UI_STAFF_POLL_SECONDS = 1
    settings.UI_PROGRESS_POLL_SECONDS = 1
    product_fulfiller_set(name="appraisal", fulfiller=CONNECTED)  # the cached catalog dropped with it
    created = connection_create(name="acme-amc", products=[Product.objects.get(name="appraisal")])
    monkeypatch.setattr("tests.ui.test_staff_order_browser.SCREENSHOTS", ARTIFACTS / "api-delivery")

    host.open()
    ui = host.launch_new(user="lender.demo", loan="DEMO-1001", product="Residential appraisal")
    app_state(ui, "order")
    ui.get_by_role("button", name="Place order").click()
    app_state(ui, "transaction")
    transaction_id = ui.locator("#transaction-id").inner_text().rsplit(" ", 1)[-1]
    order = order_of(transaction_id, OrderStatus.WITH_STAFF, timeout=SENT_MS / 1000)

    # The partner's system answers through the API, as its own client would.
    api = ApiClient(service.url, created.client_id, created.client_secret)

    def post(path, **kwargs):
        answer = api.post(f"/orders/{order.pk}{path}", key=str(uuid.uuid4()), **kwargs)
        assert answer.status_code in (200, 201), answer.text
        return answer.json()

    post("/acknowledge")
    document = post("/documents", files={"file": ("appraisal-report.pdf", PDF)})
    post(
        "/deliveries",
        json={
            "final": True,
            "message": "Appraisal complete",
            "documents": [document["id"]],
            "loan": {"appraisal": {"appraisedValue": 455000, "effectiveDate": "2026-11-27", "condition": "C3"}},
        },
    )
    delivery_sent(transaction_id, DeliveryKind.FINAL)

    expect(ui.locator("#app")).to_have_attribute("data-step", "completed", timeout=SENT_MS)
    results_shown(ui, APPRAISAL)
    expect(ui.locator("#results-block")).to_contain_text("Appraised value$455,000")
    expect(ui.locator("#timeline > li").nth(0).locator(".entry-values")).to_have_text(
        "Appraised value $455,000 · Effective date November 27, 2026 · Condition C3: well maintained, normal wear"
    )
    panel_screenshot("01-lender-api-delivery", page)
    assert not [message for message in page.console_messages if message.startswith("pageerror")]
