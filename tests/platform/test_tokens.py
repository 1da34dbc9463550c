"""The token manager against a local token endpoint: caching, renewal, single flight, 401 handling."""

import base64
import threading
from urllib.parse import parse_qs

import pytest
from django.core.cache import cache

from partner.core.logging import redact
from partner.platform import client, tokens
from partner.platform.errors import ServiceAuthenticationError, ServiceUnavailableError
from tests.helpers.processes import token_race_with_another_process
from tests.helpers.servers import TOKEN_PATH, Reply

TX = "/svc/partner/v2/transactions/t1"


def token_reply(value, expires_in=3600, delay=0.0):
    return Reply(200, {"access_token": value, "token_type": "Bearer", "expires_in": expires_in}, delay=delay)


def test_client_credentials_request(fake_service, settings):
    settings.SVC_CLIENT_ID = "my-client"
    settings.SVC_CLIENT_SECRET = "my-client-secret"
    settings.SVC_SCOPE = "pc pcapi"
    assert tokens.token_get() == "fake-access-token-1"
    [request] = fake_service.requests_to("POST", TOKEN_PATH)
    assert parse_qs(request.body.decode()) == {"grant_type": ["client_credentials"], "scope": ["pc pcapi"]}
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"my-client:my-client-secret").decode()
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"


def test_one_token_for_many_calls_and_it_is_masked_in_logs(fake_service):
    fake_service.route("GET", TX, Reply(200, {"id": "t1"}))
    for _ in range(5):
        client.get_transaction("t1")
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 1
    assert {s.headers["Authorization"] for s in fake_service.requests_to("GET", TX)} == {"Bearer fake-access-token-1"}
    assert "fake-access-token-1" not in redact("sent fake-access-token-1 to the service")


def test_token_lives_in_the_shared_cache(fake_service):
    tokens.token_get()
    from partner.platform.http import sessions_close

    sessions_close()  # as a new process would: nothing in memory, only the cache
    assert tokens.token_get() == "fake-access-token-1"
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 1


def test_renewed_before_expiry(fake_service):
    fake_service.route("POST", TOKEN_PATH, token_reply("first-token-abc", 600), token_reply("second-token-abc", 600))
    assert tokens.token_get() == "first-token-abc"
    entry = cache.get(tokens._key("access"))
    assert entry["expires_at"] - entry["renew_at"] == pytest.approx(60, abs=1)  # renewed a minute early
    cache.set(tokens._key("access"), {**entry, "renew_at": entry["renew_at"] - 600})  # now within the last minute
    assert tokens.token_get() == "second-token-abc"


def test_early_renewal_is_a_tenth_of_the_life_at_most_a_minute():
    assert tokens.early_renewal(3600) == 60
    assert tokens.early_renewal(300) == 30
    assert tokens.early_renewal(10) == 1
    assert tokens.early_renewal(0) == 0


def test_many_threads_needing_a_token_make_one_request(fake_service):
    fake_service.route("POST", TOKEN_PATH, token_reply("single-flight-token", delay=0.3))
    got = []
    workers = [threading.Thread(target=lambda: got.append(tokens.token_get())) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert got == ["single-flight-token"] * 8
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 1


def test_two_processes_share_one_token_request(fake_service, service_calls):
    fake_service.route("POST", TOKEN_PATH, token_reply("cross-process-token", delay=0.5))
    race = token_race_with_another_process(service_calls)
    assert race["ours"]["tokens"] == race["theirs"]["tokens"] == ["cross-process-token"]
    assert race["ours"]["requests"] + race["theirs"]["requests"] == 1
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 1


def test_a_401_renews_the_token_and_retries_once(fake_service):
    fake_service.route("POST", TOKEN_PATH, token_reply("stale-token-abc"), token_reply("fresh-token-abc"))
    fake_service.route("GET", TX, Reply(200, {"id": "t1"}), Reply(401, {}), Reply(200, {"id": "t1"}))
    client.get_transaction("t1")
    client.get_transaction("t1")
    assert [s.headers["Authorization"] for s in fake_service.requests_to("GET", TX)] == [
        "Bearer stale-token-abc",
        "Bearer stale-token-abc",
        "Bearer fresh-token-abc",
    ]
    assert cache.get(tokens._key("access"))["access_token"] == "fresh-token-abc"


def test_concurrent_401s_cost_one_renewal(fake_service):
    """Four calls sent with the revoked token: one new token for all of them, also for the
    refusals that arrive after the renewal (they must not drop the new token)."""
    fake_service.route("POST", TOKEN_PATH, token_reply("revoked-token-abc"), token_reply("renewed-token-abc"))
    tokens.token_get()
    refusals = [
        Reply(401, {"error": "invalid_token"}, headers={"WWW-Authenticate": "Bearer"}, delay=delay)
        for delay in (0.1, 0.4, 0.7, 1.0)
    ]
    fake_service.route("GET", TX, *refusals, Reply(200, {"id": "t1"}))
    errors = []

    def call():
        try:
            client.get_transaction("t1")
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    callers = [threading.Thread(target=call) for _ in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert errors == []
    sent = [s.headers["Authorization"] for s in fake_service.requests_to("GET", TX)]
    assert sent == ["Bearer revoked-token-abc"] * 4 + ["Bearer renewed-token-abc"] * 4
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 2  # the first token and one renewal


def test_a_second_401_fails(fake_service):
    fake_service.route("POST", TOKEN_PATH, token_reply("token-one-abc"), token_reply("token-two-abc"))
    fake_service.route("GET", TX, Reply(401, {"error": "invalid_token"}))
    with pytest.raises(ServiceAuthenticationError) as caught:
        client.get_transaction("t1")
    assert caught.value.status == 401
    assert len(fake_service.requests_to("GET", TX)) == 2
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 2


def test_a_401_on_an_unsafe_patch_is_sent_again_once_with_the_new_token(fake_service):
    # A 401 means the service did not act on the request, so sending it again is safe.
    fake_service.route("PATCH", f"{TX}/response", Reply(401, {}), Reply(200, {}))
    client.patch_response("t1", {"status": "processing"})
    assert len(fake_service.requests_to("PATCH", f"{TX}/response")) == 2


def test_drop_forgets_only_the_token_that_was_used(fake_service):
    fake_service.route("POST", TOKEN_PATH, token_reply("current-token-abc"))
    tokens.token_get()
    tokens.token_drop("older-token-abc")  # another process already renewed it
    assert cache.get(tokens._key("access"))["access_token"] == "current-token-abc"
    tokens.token_drop("current-token-abc")
    assert cache.get(tokens._key("access")) is None


def test_refused_client_credentials(fake_service, settings):
    settings.SVC_CLIENT_SECRET = "wrong-client-secret"
    fake_service.route("POST", TOKEN_PATH, Reply(401, {"error": "invalid_client"}))
    with pytest.raises(ServiceAuthenticationError) as caught:
        tokens.token_get()
    assert "wrong-client-secret" not in str(caught.value)
    assert "invalid_client" in str(caught.value)


def test_token_endpoint_down_is_retried_then_transient(fake_service, settings):
    settings.SVC_MAX_RETRIES = 1
    fake_service.route("POST", TOKEN_PATH, Reply(503, {}))
    with pytest.raises(ServiceUnavailableError) as caught:
        tokens.token_get()
    assert caught.value.transient
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 2
    assert cache.get(tokens._key("lock")) is None  # the lock is released after a failure


def test_a_stuck_lock_does_not_block_forever(fake_service, settings):
    settings.SVC_TIMEOUT = (0.1, 0.1)  # lock life and wait: about 5 s
    cache.set(tokens._key("lock"), "a-process-that-died", timeout=60)
    assert tokens.token_get() == "fake-access-token-1"


def test_origin_401_renews_only_when_the_bearer_scheme_is_named(fake_service):
    path = "/svc/partner/v2/origins/o1"
    fake_service.route("GET", path, Reply(401, {"error": "invalid_origin"}))
    with pytest.raises(ServiceAuthenticationError):
        client.get_origin("o1", "partner-access-token-1")
    assert len(fake_service.requests_to("GET", path)) == 1
    fake_service.route(
        "GET", path, Reply(401, {}, {"WWW-Authenticate": 'Bearer error="invalid_token"'}), Reply(200, {"id": "o1"})
    )
    assert client.get_origin("o1", "partner-access-token-1").id == "o1"
    assert len(fake_service.requests_to("POST", TOKEN_PATH)) == 2
    assert {s.headers["X-Svc-PAT"] for s in fake_service.requests_to("GET", path)} == {"partner-access-token-1"}


def test_pat_header_name_comes_from_settings(fake_service, settings):
    settings.SVC_PAT_HEADER = "X-Other-PAT"
    fake_service.route("GET", "/svc/partner/v2/origins/o%3A1", Reply(200, {"id": "o:1"}))
    assert client.get_origin("o:1", "partner-access-token-2").id == "o:1"  # ids are quoted into one segment
    [seen] = fake_service.requests_to("GET", "/svc/partner/v2/origins/o%3A1")
    assert seen.headers["X-Other-PAT"] == "partner-access-token-2" and "X-Svc-PAT" not in seen.headers
