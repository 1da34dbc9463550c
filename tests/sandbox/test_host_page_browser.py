"""The sandbox's host page in Chromium: its transactions list stays within its column.

Screenshots go to test-artifacts/ui/host-page/.
"""

import pytest
from playwright.sync_api import expect

from tests.helpers.browser import WAIT_MS

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


def test_a_transaction_with_its_patches_stays_in_the_transactions_column(demo, service, page, host, shot):
    from partner.sandbox.models import ResponsePatch
    from partner.sandbox.transactions import transaction_create

    transaction = transaction_create(
        product=demo.products["address-verification"],
        user=demo.users["lender.demo"],
        loan=demo.loans[0],
        send_webhook=False,
    )
    # Long enough to run far past the column on one line: a status text, two documents, loan fields.
    for number, status in ((1, "processing"), (2, "completed")):
        ResponsePatch.objects.create(
            transaction=transaction,
            number=number,
            payload={
                "status": status,
                "partnerStatus": "Address verified against the county assessor's records; city corrected",
                "resources": [
                    {"id": "r-1", "name": "address-verification-report-with-a-long-name.pdf"},
                    {"id": "r-2", "name": "county-assessor-extract.pdf"},
                ],
                "loan": {"property": {}, "propertyUsageType": "PrimaryResidence"},
            },
        )
    host.open()  # at 1,400 px (the page fixture's viewport)
    patches = page.locator(f"tr[data-patches-of='{transaction.id}']")
    expect(patches.locator("li")).to_have_count(2, timeout=WAIT_MS)
    host.launch_new()  # the panel beside the list, as a person has it

    column = page.locator("section.controls")
    table = page.locator("table.transactions")
    column_box, table_box, patches_box = column.bounding_box(), table.bounding_box(), patches.bounding_box()
    assert table_box["x"] + table_box["width"] <= column_box["x"] + column_box["width"]
    assert patches_box["x"] + patches_box["width"] <= column_box["x"] + column_box["width"]
    assert column.evaluate("(node) => node.scrollWidth - node.clientWidth") <= 0
    panel = page.locator("section.panel-frame").bounding_box()
    assert table_box["x"] + table_box["width"] < panel["x"]
    shot("host-page/transactions-with-patches")
