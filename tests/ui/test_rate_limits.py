"""The page's JSON reads are rate-limited per client address (settings.RATELIMIT_ORIGIN).

Found by a probe: 300 wrong partner access tokens in 3 s were all proxied to the service. Past the
limit the answer is 429 with Retry-After and the `errors` shape, and the service is not called (the
sandbox on the live server would record the call in `service_calls`). Each test sets a small rate and
uses addresses of its own; the clock of the windows stands still (`ratelimit_clock`), so that no
window ends mid-test, except in the last test, which waits out a real one.
"""

import itertools
import random
import time

import pytest

from partner.sandbox.origins import origin_create

pytestmark = pytest.mark.django_db

# Addresses no other test (nor another run sharing a Redis cache) uses.
_RUN = random.randrange(256)
_NEXT = itertools.count(1)


def new_address() -> str:
    return f"10.{_RUN}.{next(_NEXT)}.7"


def launched(seed):
    origin = origin_create(
        user=seed.users["lender.demo"], loan=seed.loans[0], product=seed.products["address-verification"]
    )
    return origin.origin_id, origin.partner_access_token


def proxy_get(client, origin_id, token, address):
    return client.get(f"/v1/origins/{origin_id}", {"partnerAccessToken": token}, REMOTE_ADDR=address)


def assert_limited(response) -> int:
    """A 429 with an honest Retry-After (whole seconds, within the window) saying the same in its body."""
    assert response.status_code == 429, response.content
    seconds = int(response["Retry-After"])
    assert 1 <= seconds <= 60
    assert response.json() == {
        "errors": [
            {
                "status": None,
                "code": "rate_limited",
                "message": f"Too many requests from this address. Try again in {seconds} seconds.",
            }
        ]
    }
    return seconds


def test_wrong_tokens_past_the_limit_answer_429_and_never_reach_the_service(
    demo, client, service_calls, settings, ratelimit_clock
):
    settings.RATELIMIT_ORIGIN = "5/m"
    origin_id, token = launched(demo)
    address = new_address()
    for attempt in range(5):
        response = proxy_get(client, origin_id, f"wrong-token-{attempt}", address)
        assert response.status_code == 401  # asked of the service, which refused it
    asked = len(service_calls)
    assert asked >= 5

    assert_limited(proxy_get(client, origin_id, "wrong-token-5", address))
    # Nor does the right token get through from this address until the window frees.
    assert_limited(proxy_get(client, origin_id, token, address))
    assert len(service_calls) == asked


def test_the_pages_reads_share_the_count(demo, client, service_calls, settings, ratelimit_clock):
    settings.RATELIMIT_ORIGIN = "2/m"
    client.handler.enforce_csrf_checks = False
    origin_id, token = launched(demo)
    address = new_address()
    headers = {"HTTP_X_ORIGIN_ID": origin_id, "HTTP_X_PARTNER_ACCESS_TOKEN": token, "REMOTE_ADDR": address}
    assert proxy_get(client, origin_id, token, address).status_code == 200
    assert client.get("/ui/transactions/tx-limit-1", **headers).status_code == 200
    asked = len(service_calls)

    assert_limited(client.get("/ui/transactions/tx-limit-1", **headers))
    assert_limited(client.post("/ui/orders/check", data="{}", content_type="application/json", **headers))
    assert_limited(proxy_get(client, origin_id, token, address))
    assert len(service_calls) == asked


def test_another_address_is_not_limited(demo, client, service_calls, settings, ratelimit_clock):
    settings.RATELIMIT_ORIGIN = "1/m"
    origin_id, token = launched(demo)
    limited, other = new_address(), new_address()
    assert proxy_get(client, origin_id, "wrong-token", limited).status_code == 401
    assert_limited(proxy_get(client, origin_id, "wrong-token", limited))

    asked = len(service_calls)
    assert proxy_get(client, origin_id, token, other).status_code == 200
    assert len(service_calls) > asked


def test_after_the_window_the_address_is_served_again(demo, client, service_calls, settings):
    settings.RATELIMIT_ORIGIN = "2/3s"
    origin_id, token = launched(demo)
    address = new_address()
    for _ in range(12):  # on the real clock a window may end mid-way: ask until one is used up
        response = proxy_get(client, origin_id, "wrong-token", address)
        if response.status_code == 429:
            break
    seconds = assert_limited(response)
    assert seconds <= 3

    time.sleep(seconds)  # Retry-After is honest: once it has passed, the window is a new one
    asked = len(service_calls)
    assert proxy_get(client, origin_id, token, address).status_code == 200
    assert len(service_calls) > asked
