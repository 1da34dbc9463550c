"""The one Redis (the cache and the broker, compose's layout) down, over real HTTP: the cache and the
broker point at a closed port, nothing of Redis is mocked.

- The API's reads need no cache: they answer 200 (the per-client count is skipped, fail-open, since
  it guards capacity only), and so does an answer, stored and published later by the sweep.
- The token endpoint's limit guards the client secrets and cannot count: 503 problem+json with
  Retry-After, never a 500. A request without a token is still 401.
Before, every one of these answered 500.
"""

import socket
import uuid

import pytest
import requests

from partner.connector import answers
from partner.fulfillment.models import Delivery, DeliveryKind
from tests.helpers.connector import ApiClient
from tests.helpers.outages import database_away
from tests.helpers.workers import broker_point

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_down(settings):
    """Point the cache and the broker at a port nobody listens on; put both back after."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    kept = settings.CACHES

    def down():
        settings.CACHES = {"default": {**kept["default"], "LOCATION": closed}}
        broker_point(closed)

    yield down
    broker_point(settings.CELERY_BROKER_URL)


def test_with_redis_down_reads_and_answers_work_and_the_token_endpoint_says_503(
    live_server, connection, order, redis_down
):
    created = connection.created
    api = ApiClient(live_server.url, created.client_id, created.client_secret)  # its token, while Redis is up
    redis_down()

    for path in ("/orders", f"/orders/{order.pk}", "/events", "/products"):
        answer = api.get(path)
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:200])
    answer = api.post(f"/orders/{order.pk}/status-updates", key=str(uuid.uuid4()), json={"text": "Booked"})
    assert answer.status_code == 201, answer.text[:200]
    assert Delivery.objects.filter(order=order, kind=DeliveryKind.STATUS_UPDATE).exists()

    token = requests.post(
        f"{api.base}/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(created.client_id, created.client_secret),
        timeout=10,
    )
    assert token.status_code == 503 and token.headers["Content-Type"] == "application/problem+json"
    assert token.headers["Retry-After"] == "5"
    body = token.json()
    assert body["type"].endswith("/unavailable") and body["status"] == 503 and "access_token" not in body

    untokened = requests.get(f"{api.base}/orders", timeout=10)
    assert untokened.status_code == 401 and untokened.json()["type"].endswith("/unauthenticated")


def test_a_count_that_cannot_be_made_fails_open_only_when_told_and_warns_once(redis_down, caplog):
    from django.test import RequestFactory
    from redis.exceptions import ConnectionError as RedisConnectionError

    from partner.core.ratelimits import request_counted

    request = RequestFactory().get("/api/v1/orders")
    request_counted(request, group="probe", rate="1000/m", fail_open=True)  # counted: no outage so far
    redis_down()
    with caplog.at_level("WARNING", logger="partner.core.ratelimits"):
        for _ in range(3):
            assert request_counted(request, group="probe", rate="1/m", fail_open=True) is None
    assert [r.getMessage() for r in caplog.records if r.name == "partner.core.ratelimits"] == [
        "rate limits not counted, the cache is unreachable (ConnectionError)"
    ]
    with pytest.raises(RedisConnectionError):
        request_counted(request, group="probe", rate="1/m")


def test_an_answer_met_by_our_database_restarting_is_503_with_retry_after_not_500(
    live_server, connection, order, tasks_sent, monkeypatch
):
    """A drill that restarted PostgreSQL under 2,000 orders saw the API answer 500 to a partner's
    system: an outage of ours is a moment's unavailability (503, Retry-After), never a bug's 500.
    A bug is still a 500."""
    created = connection.created
    api = ApiClient(live_server.url, created.client_id, created.client_secret)
    monkeypatch.setattr(answers, "status_update_post", database_away)

    answer = api.post(f"/orders/{order.pk}/status-updates", key=str(uuid.uuid4()), json={"text": "Booked"})

    assert answer.status_code == 503 and answer.headers["Content-Type"] == "application/problem+json"
    assert answer.headers["Retry-After"] == "5"
    assert answer.json()["type"].endswith("/unavailable")

    def bug(**kwargs):
        raise KeyError("text")

    monkeypatch.setattr(answers, "status_update_post", bug)
    answer = api.post(f"/orders/{order.pk}/status-updates", key=str(uuid.uuid4()), json={"text": "Booked"})
    assert answer.status_code == 500
