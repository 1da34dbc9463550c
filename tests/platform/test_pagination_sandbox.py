"""Pagination of #7 against the sandbox: boundaries of the result set, start and limit (spec, Limits)."""

import math

import pytest
from django.conf import settings

from partner.platform import client
from partner.platform.errors import ServiceValidationError
from partner.platform.http import response_json
from partner.platform.tokens import authorized_send
from partner.sandbox.transactions import transaction_create

pytestmark = pytest.mark.django_db


def transactions_create(sandbox, count):
    seed = sandbox.seed
    return [
        transaction_create(
            product=seed.products["address-verification"],
            user=seed.users["lender.demo"],
            loan=seed.loans[i % len(seed.loans)],
            send_webhook=False,
        ).id
        for i in range(count)
    ]


def raw_page(start, limit):
    """#7 without the client's own argument checks, to see what the service answers."""
    response = authorized_send(
        "GET", f"{settings.SVC_BASE_URL}/partner/v2/transactions", retry=True, params={"start": start, "limit": limit}
    )
    return response_json(response, method="GET", what="transaction listing"), response.headers["X-Total-Count"]


def page_calls(calls):
    return [c for c in calls if "/partner/v2/transactions?" in c["url"]]


@pytest.mark.parametrize("size", [0, 1, 25, 50, 51])
def test_iteration_stops_exactly_at_the_total(sandbox, service_calls, size):
    ids = transactions_create(sandbox, size)
    for page_size in (25, 50):
        service_calls.clear()
        seen = [t.id for t in client.iter_transactions(page_size=page_size)]
        assert seen == ids  # every item once, in order
        assert len(page_calls(service_calls)) == max(1, math.ceil(size / page_size))

    first = client.list_transactions_page(start=0, limit=50)
    assert first.total == size and len(first.items) == min(size, 50)
    assert first.next_start == (50 if size > 50 else None)

    at_end = client.list_transactions_page(start=size, limit=50)  # start equal to the size: allowed, empty
    assert at_end.items == [] and at_end.total == size

    with pytest.raises(ServiceValidationError) as caught:  # start beyond the size
        client.list_transactions_page(start=size + 1, limit=50)
    assert caught.value.status == 400 and caught.value.body["error"]


def test_pages_split_as_the_spec_example(sandbox):
    ids = transactions_create(sandbox, 10)
    first = client.list_transactions_page(start=0, limit=5)
    second = client.list_transactions_page(start=5, limit=5)
    assert [t.id for t in first.items] == ids[:5] and [t.id for t in second.items] == ids[5:]
    assert first.next_start == 5 and second.next_start is None


def test_limit_bounds(sandbox):
    transactions_create(sandbox, 3)
    # limit 0 is a non-negative integer, so the spec allows it: no items, but the total.
    assert raw_page(0, 0) == ([], "3")
    assert client.list_transactions_page(start=0, limit=0).total == 3
    with pytest.raises(ServiceValidationError) as caught:  # above the maximum of 50: the sandbox answers 400
        raw_page(0, 51)
    assert caught.value.status == 400
    with pytest.raises(ValueError):  # and the client does not even send it
        client.list_transactions_page(start=0, limit=51)
    with pytest.raises(ValueError):
        client.list_transactions_page(start=-1, limit=10)
    with pytest.raises(ValueError):
        next(client.iter_transactions(page_size=0))
    items, total = raw_page(0, 25)
    assert total == "3" and len(items) == 3
