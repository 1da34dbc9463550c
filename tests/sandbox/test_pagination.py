"""Pagination of #7 and #8 exactly as the spec's Limits say."""

import pytest

from partner.sandbox.models import Product
from partner.sandbox.transactions import transaction_create


def _transactions(sandbox, count):
    seed = sandbox.seed
    return [
        transaction_create(
            product=seed.products["address-verification"],
            user=seed.users["lender.demo"],
            loan=seed.loans[0],
            send_webhook=False,
        ).id
        for _ in range(count)
    ]


def _products(sandbox, count):
    """Exactly `count` products (the two demo products count)."""
    Product.objects.all().delete()
    template = sandbox.seed.products["address-verification"].data
    return [
        Product.objects.create(
            service_id=f"prod-{n:03d}",
            name=f"product-{n:03d}",
            data={**template, "id": f"prod-{n:03d}", "name": f"product-{n:03d}"},
        ).service_id
        for n in range(count)
    ]


@pytest.mark.parametrize("count", [0, 1, 25, 50, 51])
def test_transaction_pages(api, sandbox, count):
    ids = _transactions(sandbox, count)
    url = api.url("/partner/v2/transactions")
    first = api.get(url, timeout=10)
    assert first.status_code == 200
    assert first.headers["X-Total-Count"] == str(count)
    assert [item["id"] for item in first.json()] == ids[:25]  # default limit 25
    largest = api.get(url, params={"limit": 50}, timeout=10)
    assert [item["id"] for item in largest.json()] == ids[:50]
    # Walking with start/limit returns every item once, in order.
    walked, start = [], 0
    while start < count:
        page = api.get(url, params={"start": start, "limit": 20}, timeout=10)
        assert page.status_code == 200
        walked += [item["id"] for item in page.json()]
        start += 20
    assert walked == ids
    at_end = api.get(url, params={"start": count}, timeout=10)
    assert at_end.status_code == 200 and at_end.json() == []
    assert at_end.headers["X-Total-Count"] == str(count)
    beyond = api.get(url, params={"start": count + 1}, timeout=10)
    assert beyond.status_code == 400
    assert beyond.json()["error"] == "invalid_pagination"


def test_transaction_list_items_carry_no_credentials(api, sandbox):
    _transactions(sandbox, 1)
    item = api.get(api.url("/partner/v2/transactions"), timeout=10).json()[0]
    assert "credentials" not in item["request"]
    assert item["request"]["type"] == "NEW_REQUEST"
    assert item["product"]["name"] == "address-verification"


@pytest.mark.parametrize("count", [0, 1, 25, 50, 51])
def test_product_pages(api, sandbox, count):
    ids = _products(sandbox, count)
    url = api.url("/partner/v2/products")
    first = api.get(url, timeout=10)
    assert first.headers["X-Total-Count"] == str(count)
    assert [item["id"] for item in first.json()] == ids[:25]
    second = api.get(url, params={"start": 25, "limit": 50}, timeout=10) if count >= 25 else None
    if second is not None:
        assert [item["id"] for item in second.json()] == ids[25:75]
    assert api.get(url, params={"start": count}, timeout=10).json() == []
    assert api.get(url, params={"start": count + 1}, timeout=10).status_code == 400


def test_spec_example_ten_items_two_pages_of_five(api, sandbox):
    ids = _products(sandbox, 10)
    url = api.url("/partner/v2/products")
    assert [p["id"] for p in api.get(url, params={"start": 0, "limit": 5}, timeout=10).json()] == ids[:5]
    assert [p["id"] for p in api.get(url, params={"start": 5, "limit": 5}, timeout=10).json()] == ids[5:]


@pytest.mark.parametrize("path", ["/partner/v2/products", "/partner/v2/transactions"])
def test_limit_bounds_and_malformed_values(api, sandbox, path):
    url = api.url(path)
    zero = api.get(url, params={"limit": 0}, timeout=10)
    assert zero.status_code == 200 and zero.json() == []
    assert zero.headers["X-Total-Count"] == str(3 if "products" in path else 0)  # the three demo products
    assert api.get(url, params={"limit": 50}, timeout=10).status_code == 200
    for params in [
        {"limit": 51},
        {"limit": -1},
        {"start": -1},
        {"start": "a"},
        {"limit": "1.5"},
        {"limit": ""},
        {"start": " 1"},
        {"limit": "99999999999"},
    ]:
        answer = api.get(url, params=params, timeout=10)
        assert answer.status_code == 400, params
        assert answer.json()["error"] == "invalid_pagination"
        assert answer.json()["message"]
