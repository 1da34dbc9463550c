"""The product's change page in Chromium at 1,400 px: nothing runs past the page or its box (the
credential definitions inline ran 750 px past it), and rows added with "Add" are saved (#14 item 11).
Screenshots in test-artifacts/ui/. `signed_in` and `shot` are tests/helpers/browser.py's."""

import pytest

from partner.catalog.models import CredentialDefinition, Product
from partner.platform import formats, urns
from tests.helpers.product_page import change_url, listed_fields

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


@pytest.fixture
def listed(product):
    for name, value in listed_fields().items():
        setattr(product, name, value)
    product.save()
    CredentialDefinition.objects.create(
        product=product,
        key="branchIdentifier",
        title="Branch identifier of the lending office",
        minimum=4,
        maximum=30,
        pattern=r"^[A-Z]{2}-[0-9]{4}-[A-Za-z0-9._-]+$",
        scope="company",
        position=3,
    )
    return product


def overflow(page, selector) -> dict:
    """How far `selector` runs past its own box and past the page's."""
    return page.locator(selector).first.evaluate(
        """(node) => ({
            inside: node.scrollWidth - node.clientWidth,
            page: node.getBoundingClientRect().right - document.documentElement.clientWidth,
        })"""
    )


def test_the_product_page_fits_1400_px(live_server, signed_in, shot, listed):
    page = signed_in
    page.goto(live_server.url + change_url(listed))
    assert page.viewport_size["width"] == 1400
    width = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    shot("catalog-product-change")
    shot("catalog-product-credential-definitions", page.locator("#credential_definitions-group"))
    assert width[0] <= width[1], f"the page is {width[0]} px wide in a {width[1]} px window"
    for selector in ["#credential_definitions-group", "#credential_definitions-group table", ".product-rows"]:
        runs = overflow(page, selector)
        assert runs["inside"] <= 0 and runs["page"] <= 0, (selector, runs)
    table = page.locator("#credential_definitions-group table").bounding_box()
    group = page.locator("#credential_definitions-group").bounding_box()
    assert table["x"] + table["width"] <= group["x"] + group["width"] + 1
    assert not [m for m in page.console_messages if m.startswith(("error", "pageerror"))]


def test_rows_added_in_the_browser_are_saved(live_server, signed_in, shot, listed):
    page = signed_in
    page.goto(live_server.url + change_url(listed))
    second = urns.instance_urn("QA99887766")

    page.get_by_role("button", name="Add a lender instance").first.click()
    page.locator("input[name='access_allow-1-urn']").fill(second)

    page.get_by_role("button", name="Add a transaction entitlement").click()
    page.locator("input[name='data_transaction-1-request_types']").fill("ACCEPTED_ORDER")
    new = page.locator("fieldset.product-card").nth(1)
    new.get_by_role("button", name="Add an action result").click()
    page.locator("input[name='data_transaction-1-results-0-action']").fill(formats.DISCLOSURE_ACTION)
    page.locator("input[name='data_transaction-1-results-0-formats']").fill(formats.DISCLOSURE_FORMAT)
    shot("catalog-product-rows-added", page.locator(".form-row.field-data_transaction"))

    page.get_by_role("button", name="Save and continue editing").click()
    page.wait_for_selector(".messagelist .success")
    product = Product.objects.get(pk=listed.pk)
    assert product.access_allow == [urns.instance_urn("BE11223344"), second]
    assert product.data_transaction[1] == {
        "requestTypes": ["ACCEPTED_ORDER"],
        "response": {"results": [{"action": formats.DISCLOSURE_ACTION, "formats": [formats.DISCLOSURE_FORMAT]}]},
    }
    assert product.data_transaction[0] == listed_fields()["data_transaction"][0]
