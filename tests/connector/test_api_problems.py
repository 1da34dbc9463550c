"""Every error under /api/v1/ is application/problem+json: a body nested too deeply (a 400, never a
500), an unknown route (answered by the API's last route, whatever the method), a body too large, a
server error; outside /api/v1/ nothing changes (partner/core/api.py: the shape is the view's)."""

import uuid

import pytest
import requests
from django.http import HttpResponse, HttpResponseServerError
from django.test import RequestFactory

from partner.core.api import PROBLEM_CONTENT_TYPE as CONTENT_TYPE
from partner.core.api import ErrorShapeMiddleware
from tests.helpers.connector import ApiClient

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(live_server, connection, tasks_sent):
    created = connection.created
    return ApiClient(live_server.url, created.client_id, created.client_secret)


def is_problem(answer, status: int) -> dict:
    assert answer.status_code == status, answer.text[:300]
    assert answer.headers["Content-Type"] == CONTENT_TYPE, answer.headers["Content-Type"]
    body = answer.json()
    assert body["status"] == status and body["type"].startswith("https://") and body["title"]
    return body


@pytest.mark.parametrize("depth", [1000, 100])
def test_a_body_nested_too_deeply_is_a_400_problem(api, order, depth):
    body = "[" * depth + "]" * depth  # 2 KB at 1,000 deep
    answer = api.session.post(
        f"{api.base}/orders/{order.pk}/status-updates",
        data=body,
        headers={"Idempotency-Key": str(uuid.uuid4()), "Content-Type": "application/json"},
        timeout=10,
    )
    assert "nested" in is_problem(answer, 400)["detail"]


def test_an_unknown_route_is_a_404_problem(api, live_server):
    is_problem(api.session.get(f"{api.base}/no-such-thing", timeout=10), 404)
    is_problem(requests.get(f"{live_server.url}/api/v1/", timeout=10), 404)
    # Any method, without a token: the route is unknown before anything else (not a 401, a 405, an OPTIONS 200).
    for method in ("POST", "OPTIONS", "DELETE"):
        is_problem(requests.request(method, f"{live_server.url}/api/v1/orders/1/no-such-thing", timeout=10), 404)
    outside = requests.get(f"{live_server.url}/no-such-page-either", timeout=10)
    assert outside.status_code == 404 and CONTENT_TYPE not in outside.headers["Content-Type"]


def test_a_body_too_large_is_a_413_problem(client, settings):
    settings.REQUEST_MAX_BYTES = 1000
    answer = client.post("/api/v1/orders/1/status-updates", data=b"{}" * 1000, content_type="application/json")
    assert answer.status_code == 413 and answer["Content-Type"] == CONTENT_TYPE
    assert answer.json()["title"] == "Request Entity Too Large"


def test_a_server_error_under_the_api_is_a_problem_and_elsewhere_left_alone():
    middleware = ErrorShapeMiddleware(lambda request: HttpResponseServerError("<h1>Server Error (500)</h1>"))
    answer = middleware(RequestFactory().get("/api/v1/orders"))
    assert answer.status_code == 500 and answer["Content-Type"] == CONTENT_TYPE
    assert answer.content.startswith(b"{") and b"<h1>" not in answer.content
    assert middleware(RequestFactory().get("/admin/"))["Content-Type"].startswith("text/html")
    # The shape is the path's view's: /v1/'s views declare none, so Django's answer stays as it is.
    assert middleware(RequestFactory().get("/v1/status/T-1"))["Content-Type"].startswith("text/html")
    oauth = ErrorShapeMiddleware(
        lambda request: HttpResponse('{"error": "invalid_client"}', status=401, content_type="application/json")
    )
    assert oauth(RequestFactory().post("/api/v1/oauth/token"))["Content-Type"] == "application/json"
