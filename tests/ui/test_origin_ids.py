"""An origin id that is not a plain id is answered 400 `origin_malformed` without calling the service.

`..` reached the service as a path: GET /v1/origins/%2E%2E called `GET {base}/partner/v2/`
with our bearer token and the lender's partner access token. The sandbox runs on the live
server (the `service` fixture), so a call that went out would be recorded by `service_calls`.
"""

import pytest

pytestmark = pytest.mark.django_db

TOKEN = "partner-access-token-123"  # noqa: S105 - a test value

# As written in the address of the proxy (percent-encoded as a browser would send them).
UNSAFE_IN_PATH = ["%2E%2E", "%2e%2e", "..", "%2E", ".", "...", "%252F", "a%252Fb", "%252E%252E", "a%20b", "a%00b"]
# As sent in the X-Origin-Id header of the progress and order-check endpoints.
UNSAFE_IN_HEADER = ["..", ".", "a/b", "../products", "%2F", "%2E%2E", "a\tb", "txn-José"]


def _assert_malformed(response, service_calls):
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["code"] == "origin_malformed"
    assert list(service_calls) == [] and service_calls.tokens == []


@pytest.mark.parametrize("origin_id", UNSAFE_IN_PATH)
def test_origin_proxy_refuses_an_unsafe_id_without_calling_the_service(service, service_calls, client, origin_id):
    response = client.get(f"/v1/origins/{origin_id}", {"partnerAccessToken": TOKEN})
    _assert_malformed(response, service_calls)


@pytest.mark.parametrize("origin_id", ["a%2Fb", "%2E%2E%2Fproducts", "a/b"])
def test_a_slash_in_the_address_never_reaches_the_service(service, service_calls, client, origin_id):
    """A decoded "/" makes another address: not the proxy's (404), and nothing is sent on."""
    response = client.get(f"/v1/origins/{origin_id}", {"partnerAccessToken": TOKEN})
    assert response.status_code in (400, 404)
    assert list(service_calls) == [] and service_calls.tokens == []


@pytest.mark.parametrize("origin_id", UNSAFE_IN_HEADER)
def test_progress_refuses_an_unsafe_origin_id_header(service, service_calls, client, origin_id):
    headers = {"HTTP_X_ORIGIN_ID": origin_id, "HTTP_X_PARTNER_ACCESS_TOKEN": TOKEN}
    _assert_malformed(client.get("/ui/transactions/txn-1", **headers), service_calls)


@pytest.mark.parametrize("origin_id", ["..", "a/b"])
def test_order_check_refuses_an_unsafe_origin_id_header(service, service_calls, client, origin_id):
    client.handler.enforce_csrf_checks = False
    headers = {"HTTP_X_ORIGIN_ID": origin_id, "HTTP_X_PARTNER_ACCESS_TOKEN": TOKEN}
    response = client.post("/ui/orders/check", data="{}", content_type="application/json", **headers)
    _assert_malformed(response, service_calls)


def test_a_plain_id_is_still_asked_of_the_service(service, service_calls, client):
    """The check refuses shapes, not ids: an unknown plain id goes to the service, which refuses it."""
    response = client.get("/v1/origins/no-such-origin.1_~x", {"partnerAccessToken": TOKEN})
    assert response.status_code == 401
    assert response.json()["errors"][0]["code"] == "origin_expired"
    assert [call["url"] for call in service_calls] == [f"{service.base_url}/partner/v2/origins/no-such-origin.1_~x"]
