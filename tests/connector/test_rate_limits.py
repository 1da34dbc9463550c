"""The connector's API is rate-limited per OAuth client (RATELIMIT_API) and its token endpoint per
address (RATELIMIT_API_TOKEN): past either, 429 as problem+json with Retry-After, and nothing done."""

import pytest
import requests

from partner.connector.services import connection_create
from partner.fulfillment.models import Delivery, DeliveryKind
from tests.helpers.connector import ApiClient

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("ratelimit_clock")]


@pytest.fixture(autouse=True)
def _counts_of_this_test_only():
    from django.core.cache import cache

    cache.clear()  # the counts of earlier tests (the same client ids, the same address) are not this one's
    yield
    cache.clear()


def assert_throttled(answer):
    assert answer.status_code == 429
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.json()["type"].endswith("/throttled")
    assert 1 <= int(answer.headers["Retry-After"]) <= 61


def test_each_client_has_its_own_count_and_a_429_changes_nothing(live_server, connection, order, settings):
    settings.RATELIMIT_API = "3/m"
    created = connection.created
    first = ApiClient(live_server.url, created.client_id, created.client_secret)
    for _ in range(3):
        assert first.get(f"/orders/{order.pk}").status_code == 200

    refused = first.post(f"/orders/{order.pk}/status-updates", key="k-1", json={"text": "Booked"})
    assert_throttled(refused)
    assert not Delivery.objects.filter(kind=DeliveryKind.STATUS_UPDATE).exists()

    # Another partner system, from the same address, is not held back by the first one's calls.
    other = connection_create(name="other-amc", endpoint_url="http://127.0.0.1:9/hooks")
    second = ApiClient(live_server.url, other.client_id, other.client_secret)
    assert second.get("/orders").status_code == 200


def test_requests_without_a_token_are_refused_before_they_count(live_server, connection, order, settings):
    settings.RATELIMIT_API = "1/m"
    for _ in range(3):
        assert requests.get(f"{live_server.url}/api/v1/orders/{order.pk}", timeout=10).status_code == 401
    created = connection.created
    client = ApiClient(live_server.url, created.client_id, created.client_secret)
    assert client.get(f"/orders/{order.pk}").status_code == 200
    assert_throttled(client.get(f"/orders/{order.pk}"))


def test_token_requests_are_limited_per_address_whatever_the_secret(live_server, connection, settings):
    settings.RATELIMIT_API_TOKEN = "2/m"
    created = connection.created
    url = f"{live_server.url}/api/v1/oauth/token"
    data = {"grant_type": "client_credentials"}
    assert requests.post(url, data=data, auth=(created.client_id, "a-guess"), timeout=10).status_code == 401
    assert requests.post(url, data=data, auth=(created.client_id, created.client_secret), timeout=10).ok
    # Past the limit even the right secret waits: a guesser gets nothing more for trying.
    assert_throttled(requests.post(url, data=data, auth=(created.client_id, created.client_secret), timeout=10))


def test_requests_with_a_wrong_token_are_limited_per_address(live_server, connection, order, settings):
    settings.RATELIMIT_API_TOKEN = "2/m"
    url = f"{live_server.url}/api/v1/orders/{order.pk}"
    for _ in range(2):
        assert requests.get(url, headers={"Authorization": "Bearer a-guess"}, timeout=10).status_code == 401
    assert_throttled(requests.get(url, headers={"Authorization": "Bearer another-guess"}, timeout=10))
    assert_throttled(requests.get(url, timeout=10))  # no token at all: the same count
