"""The fulfiller promise: a new kind of work is one module plus one registry line, and nothing else.

`stamp_fulfiller.py` is that module; the `registered` fixture is that line. With it, and no
other change, the catalog accepts the key, the admin offers it, a newly pulled product of its
category gets it, the order form is its form, and an order runs through it.
"""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from partner.catalog.fulfiller_keys import fulfiller_choices
from partner.catalog.models import Product
from partner.catalog.services import products_pull
from partner.fulfillment.automated.fulfillers import FULFILLERS
from partner.fulfillment.models import OrderStatus
from partner.fulfillment.orders.services import order_open
from partner.ui.forms import order_options_schema
from tests.helpers.orders import order_ran
from tests.helpers.products import LENDER_CREDENTIALS, product_create
from tests.helpers.stamp_fulfiller import StampFulfiller

pytestmark = pytest.mark.django_db

STAMP_SCHEMA = [
    {
        "name": "ink",
        "label": "Ink",
        "kind": "select",
        "required": True,
        "help": "",
        "initial": "red",
        "choices": [{"value": "red", "label": "Red"}, {"value": "blue", "label": "Blue"}],
    }
]


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(FULFILLERS, "stamp", StampFulfiller)  # the one registry line


def service_product(product_id: str, name: str, categories: list[str]) -> dict:
    return {"id": product_id, "name": name, "requestTypes": ["NEW_REQUEST"], "tags": {"categories": categories}}


def test_without_the_registry_line_nothing_knows_it(fake_platform):
    with pytest.raises(ValidationError) as refused:
        Product(service_id="prod-stamp", name="stamp", fulfiller="stamp").full_clean()
    assert "fulfiller" in refused.value.message_dict
    assert "stamp" not in dict(fulfiller_choices())
    fake_platform.products = [service_product("prod-stamp", "stamp", ["STAMP"])]
    products_pull()
    assert Product.objects.get(name="stamp").fulfiller != "stamp"
    assert order_options_schema("stamp") != STAMP_SCHEMA


def test_the_catalog_accepts_the_key(registered):
    Product(service_id="prod-stamp", name="stamp", fulfiller="stamp").full_clean()


def test_the_admin_offers_it(registered, staff):
    assert ("stamp", StampFulfiller.label) in fulfiller_choices()
    product = product_create(name="stamp", credentials=False)
    page = staff.get(reverse("admin:catalog_product_change", args=[product.pk])).content.decode()
    assert f'<option value="stamp">{StampFulfiller.label}</option>' in page


def test_a_pulled_product_of_its_category_gets_it_by_default(registered, fake_platform):
    fake_platform.products = [
        service_product("prod-stamp", "stamp", ["OTHER", "STAMP"]),
        service_product("prod-plain", "plain", ["VERIFICATION"]),
    ]

    products_pull()

    assert Product.objects.get(name="stamp").fulfiller == "stamp"
    assert Product.objects.get(name="plain").fulfiller == next(iter(FULFILLERS))  # the main product's


def test_the_order_form_is_its_form(registered):
    assert order_options_schema("stamp") == STAMP_SCHEMA


def test_an_order_runs_through_it(registered, fake_platform):
    product_create(name="stamp", fulfiller="stamp")
    request = {"type": "NEW_REQUEST", "options": {"ink": "blue"}, "credentials": LENDER_CREDENTIALS}
    fake_platform.transaction_add("txn-stamp-1", request=request, product_name="stamp")
    order, _, _ = order_open(transaction_id="txn-stamp-1", product_name="stamp")

    done = order_ran(order_id=order.pk)

    assert fake_platform.names() == ["get_transaction", "request_upload_slots", "upload_resource", "patch_response"]
    assert fake_platform.called("request_upload_slots") == [
        ("txn-stamp-1", [{"name": "stamp.txt", "mimeType": "text/plain"}])
    ]
    assert fake_platform.called("upload_resource") == [("res-1", b"STAMPED txn-stamp-1 (blue)\n")]
    [(_, payload)] = fake_platform.called("patch_response")
    assert payload == {
        "status": "completed",
        "partnerStatus": "Stamped in blue",
        "referenceNumber": done.reference_number,
        "resources": [{"id": "res-1", "name": "stamp.txt", "mimeType": "text/plain"}],
    }
    assert done.reference_number.startswith("ST-")
    assert done.status == OrderStatus.RESPONSE_DELIVERED
