"""The product's change page: human labels, entitlements and webhooks as rows stored as the
service's JSON, each problem shown next to its row and nothing saved, the order form's fee and
turnaround, and the admin's "View site" (#14 items 6, 11 and 15)."""

import copy
import importlib
import re
from decimal import Decimal

import pytest
from django.forms.models import model_to_dict
from django.test import override_settings
from django.urls import clear_url_caches, reverse

from partner.catalog.models import Product
from partner.platform import formats, urns
from tests.helpers.product_page import (
    WEBHOOK_URL,
    change_url,
    form_data,
    listed_fields,
    product_post_data,
    texts_of,
    transaction_entitlement,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def listed(product):
    """The fixture's product with entitlements and webhooks as the service lists them."""
    for name, value in listed_fields().items():
        setattr(product, name, value)
    product.save()
    return product


def labels(html: str) -> list[str]:
    return [" ".join(text.split()) for text in re.findall(r"<label[^>]*>(.*?)</label>", html, re.S)]


def stored(product) -> dict:
    return model_to_dict(Product.objects.get(pk=product.pk))


def test_the_page_has_human_labels_and_rows_not_json(staff_client, listed):
    html = staff_client.get(change_url(listed)).content.decode()
    found = labels(html)
    for label in [
        "Service id:",
        "Partner id:",
        "Listing name:",
        "Request types:",
        "Interface address:",
        "Allowed lender instances:",
        "Denied lender instances:",
        "Transaction entitlements:",
        "Webhook subscriptions:",
        "Fee:",
        "Turnaround (hours):",
    ]:
        assert label in found, label
    raw = [label for label in found if re.search(r"[a-z][A-Z]|\w\.\w", label)]
    assert raw == [], raw  # no partnerId, no entitlements.access.allow
    # One row per instance, per subscription, per entitlement and per action result.
    assert "Lender instance URN" in html and "Notifications of" in html and "Action results:" in html
    assert 'name="webhooks"' not in html and 'name="access_allow"' not in html
    data = form_data(html)
    assert data["access_allow-0-urn"] == urns.instance_urn("BE11223344")
    assert data["webhooks-0-resource"] == urns.transaction_resource_type()
    assert data["webhooks-0-events"] == "created"
    assert data["data_transaction-0-request_types"] == "NEW_REQUEST"
    assert data["data_transaction-0-results-0-action"] == formats.DISCLOSURE_ACTION
    # The JSON itself stays readable, read only.
    assert texts_of(html, "product-json-view") and '"subscriptionId": "sub-1"' in texts_of(html, "product-json-view")[0]


@pytest.mark.parametrize(
    "data_transaction",
    [
        None,  # as listed
        [{"request": {}, "response": {}}, {"requestTypes": ["NEW_REQUEST"], "response": {"results": []}}],
        [{"requestTypes": [], "response": {"results": [{"action": "SEND_NOTE", "formats": ["a/b"]}]}}],
    ],
)
def test_saving_the_page_unchanged_keeps_the_json(staff_client, listed, data_transaction):
    if data_transaction is not None:
        Product.objects.filter(pk=listed.pk).update(data_transaction=data_transaction)
    before = stored(listed)
    response = staff_client.post(change_url(listed), product_post_data(staff_client, listed))
    assert response.status_code == 302
    after = stored(listed)
    for field in ("access_allow", "access_deny", "data_origin", "data_transaction", "webhooks", "request_types"):
        assert after[field] == before[field], field


def test_rows_are_stored_as_the_services_json(staff_client, listed):
    second = urns.instance_urn("QA99887766")
    data = product_post_data(
        staff_client,
        listed,
        **{
            # a second allowed instance
            "access_allow-TOTAL_FORMS": "2",
            "access_allow-1-urn": f"  {second} ",
            # the subscription's address changed, and a new one for the callbacks
            "webhooks-0-url": "https://partner.example.com/v2/webhooks",
            "webhooks-TOTAL_FORMS": "2",
            "webhooks-1-resource": urns.event_resource_type(),
            "webhooks-1-events": "created",
            "webhooks-1-url": WEBHOOK_URL,
            # the entitlement covers a second request type and gains a second action result
            "data_transaction-0-request_types": "NEW_REQUEST, ACCEPTED_ORDER",
            "data_transaction-0-results-TOTAL_FORMS": "2",
            "data_transaction-0-results-1-action": "SEND_NOTE",
            "data_transaction-0-results-1-formats": "application/vnd.note-1.0.0.json",
            # a second entitlement, typed in whole
            "data_transaction-TOTAL_FORMS": "2",
            "data_transaction-1-request_types": "ACCEPTED_ORDER",
            "data_transaction-1-request": '{"fields": ["borrower"]}',
            "data_transaction-1-response": "",
            "data_transaction-1-results-TOTAL_FORMS": "0",
            "data_transaction-1-results-INITIAL_FORMS": "0",
            "data_transaction-1-results-MIN_NUM_FORMS": "0",
            "data_transaction-1-results-MAX_NUM_FORMS": "1000",
        },
    )
    response = staff_client.post(change_url(listed), data)
    assert response.status_code == 302, texts_of(response.content.decode(), "errorlist")
    listed.refresh_from_db()
    assert listed.access_allow == [urns.instance_urn("BE11223344"), second]
    assert listed.webhooks == [
        {
            "subscriptionId": "sub-1",
            "url": "https://partner.example.com/v2/webhooks",
            "events": ["created"],
            "resource": urns.transaction_resource_type(),
        },
        {"url": WEBHOOK_URL, "events": ["created"], "resource": urns.event_resource_type()},
    ]
    first = transaction_entitlement(requestTypes=["NEW_REQUEST", "ACCEPTED_ORDER"])  # created etc. kept
    first["response"]["results"].append({"action": "SEND_NOTE", "formats": ["application/vnd.note-1.0.0.json"]})
    assert listed.data_transaction == [first, {"requestTypes": ["ACCEPTED_ORDER"], "request": {"fields": ["borrower"]}}]
    assert listed.unpushed_changes


def test_removed_rows_are_left_out(staff_client, listed):
    data = product_post_data(
        staff_client,
        listed,
        **{"access_allow-0-DELETE": "on", "webhooks-0-DELETE": "on", "data_transaction-0-results-0-DELETE": "on"},
    )
    assert staff_client.post(change_url(listed), data).status_code == 302
    listed.refresh_from_db()
    assert listed.access_allow == [] and listed.webhooks == []
    assert listed.data_transaction[0]["response"] == {"fields": ["property"], "results": []}


@pytest.mark.parametrize(
    ("changes", "css_class", "message"),
    [
        ({"webhooks-0-url": "ftp://partner.example.com/hooks"}, "field-url", "is not a valid http(s) URL"),
        ({"webhooks-0-events": " , "}, "field-events", "This field is required."),
        (
            {"webhooks-0-events": "created, exploded"},
            "field-events",
            '"exploded" is not an event type the service sends ("created").',
        ),
        ({"webhooks-0-events": "created, created"}, "field-events", "events must not repeat."),
        ({"webhooks-0-resource": "urn:svc:nope"}, "field-resource", "Select a valid choice"),
        ({"access_allow-0-urn": "urn:svc:lender:BE1"}, "field-urn", "is not a lender instance URN"),
        ({"data_transaction-0-request_types": "new request"}, "field-request_types", "is not a request type"),
        (
            {"data_transaction-0-request": "[1, 2"},
            "field-request",
            "Enter a valid JSON.",
        ),
        (
            {"data_transaction-0-results-0-formats": "application/json"},
            "field-results",
            f"Entitlement 1, result 1: {formats.DISCLOSURE_ACTION} takes only {formats.DISCLOSURE_FORMAT}.",
        ),
        (
            {"data_transaction-0-results-0-action": "update status"},
            "field-results",
            "Entitlement 1, result 1: action must be an upper-case action name",
        ),
        (
            {"access_allow-TOTAL_FORMS": "2", "access_allow-1-urn": urns.instance_urn("BE11223344")},
            "field-access_allow",
            "Instance URNs must not repeat.",
        ),
        (
            {"access_deny-TOTAL_FORMS": "1", "access_deny-0-urn": urns.instance_urn("BE11223344")},
            "field-access_deny",
            f"Instance {urns.instance_urn('BE11223344')} is both allowed and denied.",
        ),
    ],
)
def test_a_wrong_row_is_shown_next_to_its_field_and_nothing_is_saved(staff_client, listed, changes, css_class, message):
    before = stored(listed)
    data = product_post_data(staff_client, listed, listing_name="Renamed", fee="12.00", **changes)
    response = staff_client.post(change_url(listed), data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "errornote" in html
    shown = [text for text in texts_of(html, css_class) if message in text]
    assert shown, (message, texts_of(html, "errorlist"))
    assert stored(listed) == before


def test_a_new_row_left_blank_is_ignored(staff_client, listed):
    before = copy.deepcopy(stored(listed)["webhooks"])
    data = product_post_data(
        staff_client, listed, **{"webhooks-TOTAL_FORMS": "2", "webhooks-1-resource": "", "webhooks-1-url": ""}
    )
    assert staff_client.post(change_url(listed), data).status_code == 302
    assert stored(listed)["webhooks"] == before


def test_fee_and_turnaround_are_saved_from_the_order_form_fieldset(staff_client, listed):
    html = staff_client.get(change_url(listed)).content.decode()
    order_form = html[html.index(">Order form<") :]
    assert order_form.index('name="fee"') < order_form.index("</fieldset>")
    assert order_form.index('name="turnaround_hours"') < order_form.index("</fieldset>")

    data = product_post_data(staff_client, listed, fee="125.50", turnaround_hours="48")
    assert staff_client.post(change_url(listed), data).status_code == 302
    listed.refresh_from_db()
    assert (listed.fee, listed.turnaround_hours) == (Decimal("125.50"), 48)

    data = product_post_data(staff_client, listed, fee="", turnaround_hours="")
    assert staff_client.post(change_url(listed), data).status_code == 302
    listed.refresh_from_db()
    assert (listed.fee, listed.turnaround_hours) == (None, None)


def test_view_site_opens_the_sandbox_host_page(staff_client):
    html = staff_client.get(reverse("admin:index")).content.decode()
    assert f'<a href="{reverse("sandbox:host-page")}">View site</a>' in html


@pytest.fixture
def urls_without_the_sandbox():
    import config.urls

    with override_settings(SANDBOX_ENABLED=False):
        importlib.reload(config.urls)
        clear_url_caches()
        yield
    importlib.reload(config.urls)
    clear_url_caches()


def test_view_site_is_hidden_without_the_sandbox(staff_client, urls_without_the_sandbox):
    html = staff_client.get(reverse("admin:index")).content.decode()
    assert "View site" not in html
