"""The forms over the API: each product a connection works, with the loan paths its orders carry and
the JSON Schema its deliveries' `loan` must follow (the one that checks them), and a 422 that lists
the allowed values."""

import uuid

import pytest
from jsonschema import Draft202012Validator

from partner.catalog.fulfiller_keys import CONNECTED
from partner.connector.services import connection_create
from tests.helpers.connector import ApiClient
from tests.helpers.products import product_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(live_server, connection, tasks_sent):
    created = connection.created
    return ApiClient(live_server.url, created.client_id, created.client_secret)


def test_the_connection_s_products_with_their_request_fields_and_delivery_form(api, connection):
    product_create(name="flood-cert", fulfiller=CONNECTED, credentials=False)  # not this connection's
    [product] = api.get("/products").json()
    assert product["name"] == "appraisal" and product["request_types"] == ["NEW_REQUEST"]
    [form] = product["forms"]
    assert form["request_type"] == "NEW_REQUEST"
    assert form["request_fields"] == ["loan.property", "loan.loanNumber"]
    schema = form["delivery_loan"]
    Draft202012Validator.check_schema(schema)
    assert set(schema["properties"]) == {"property", "appraisal"} and schema["additionalProperties"] is False
    condition = schema["properties"]["appraisal"]["properties"]["condition"]
    assert [choice["const"] for choice in condition["oneOf"]][:2] == ["C1", "C2"]
    valid = {"appraisal": {"appraisedValue": 812000, "effectiveDate": "2026-11-20", "condition": "C3"}}
    assert Draft202012Validator(schema).is_valid(valid)
    assert not Draft202012Validator(schema).is_valid({"borrower": {}})

    assert api.get("/products/appraisal").json() == product
    missing = api.get("/products/flood-cert")
    assert missing.status_code == 404 and missing.headers["Content-Type"] == "application/problem+json"
    assert missing.json()["type"].endswith("/product-not-found")


def test_another_connection_sees_none_of_them(live_server, connection):
    other = connection_create(name="other-system")
    stranger = ApiClient(live_server.url, other.client_id, other.client_secret)
    assert stranger.get("/products").json() == []
    assert stranger.get("/products/appraisal").status_code == 404


def test_a_wrong_choice_is_refused_naming_the_allowed_values(api, order):
    wrong = api.post(
        f"/orders/{order.pk}/deliveries",
        key=str(uuid.uuid4()),
        json={
            "final": True,
            "loan": {"appraisal": {"appraisedValue": 1, "effectiveDate": "2026-11-20", "condition": "C9"}},
        },
    )
    assert wrong.status_code == 422
    assert "'C9' is not one of its choices (C1, C2, C3, C4, C5, C6)" in wrong.json()["detail"]


def test_the_products_are_in_the_openapi_document(live_server):
    import requests

    schema = requests.get(f"{live_server.url}/api/schema/?format=json", timeout=10).json()
    assert "/api/v1/products" in schema["paths"] and "/api/v1/products/{name}" in schema["paths"]
    assert {"ProductOut", "ProductFormOut"} <= set(schema["components"]["schemas"])


def test_reading_the_forms_counts_no_unreadable_entitlement(api, connected_product):
    from partner.catalog.product_cache import catalog_cache_drop
    from partner.connector.metrics import ENTITLEMENT_UNREADABLE

    connected_product.raw = {
        "entitlements": {"data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "request": {"fields": [7]}}]}}
    }
    connected_product.save(update_fields=["raw"])
    catalog_cache_drop()
    counted = ENTITLEMENT_UNREADABLE.labels(product="appraisal", reason="not_a_path")
    before = counted._value.get()
    [form] = api.get("/products/appraisal").json()["forms"]
    assert form["request_fields"] is None  # none readable: the loan as the platform sends it
    assert counted._value.get() == before  # a read of the forms is no order
