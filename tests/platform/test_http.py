"""Transport rules over a real local HTTP server: retries, backoff, redirects, upload isolation, signals."""

import contextlib
import io
import os
import socket
import threading
import time

import pytest
import requests

from partner.platform import client, http
from partner.platform.errors import (
    RequestRefused,
    ServiceError,
    ServiceNotFoundError,
    ServiceRateLimitError,
    ServiceUnavailableError,
    ServiceValidationError,
)
from partner.platform.types import UploadSlot
from tests.helpers.servers import Reply

TX = "/svc/partner/v2/transactions/t1"


# backoff and policy ------------------------------------------------------------------------------------------------
def test_backoff_grows_exponentially_with_jitter_and_a_cap(settings):
    """The project's one backoff (partner.core.retries.backoff): full jitter below a doubling ceiling."""
    settings.SVC_RETRY_BACKOFF = 1.0
    settings.SVC_RETRY_BACKOFF_MAX = 8.0
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0), (9, 8.0)]:
        delays = [http.backoff_delay(attempt) for _ in range(400)]
        assert all(0 <= d <= ceiling for d in delays)
        assert min(delays) < ceiling / 4 and max(delays) > ceiling * 3 / 4  # drawn from 0 to the ceiling


def test_backoff_never_shorter_than_retry_after(settings):
    settings.SVC_RETRY_BACKOFF = 0.1
    assert http.backoff_delay(1, retry_after=5.0) == 5.0
    assert http.backoff_delay(1, retry_after=0.0) <= 0.1


def test_only_idempotent_methods_are_retried_unless_vouched_for():
    assert http.retry_allowed("GET") and http.retry_allowed("put")
    assert not http.retry_allowed("POST") and not http.retry_allowed("PATCH")
    assert http.retry_allowed("PATCH", harmless=True)
    assert http.status_retryable(429) and http.status_retryable(500) and http.status_retryable(503)
    assert not any(http.status_retryable(s) for s in (400, 401, 404, 409, 422, 302))


# retries --------------------------------------------------------------------------------------------------------
def test_get_is_retried_on_503_then_succeeds(fake_service, service_calls):
    fake_service.route("GET", TX, Reply(503, {}), Reply(503, {}), Reply(200, {"id": "t1", "request": {"type": "X"}}))
    transaction = client.get_transaction("t1")
    assert transaction.request == {"type": "X"}
    assert len(fake_service.requests_to("GET", TX)) == 3
    assert [(c["status"], c["attempt"]) for c in service_calls] == [(503, 1), (503, 2), (200, 3)]


def test_get_is_retried_on_429_honouring_retry_after(fake_service):
    fake_service.route("GET", TX, Reply(429, {}, {"Retry-After": "0"}), Reply(200, {"id": "t1", "request": {}}))
    assert client.get_transaction("t1").id == "t1"
    assert len(fake_service.requests_to("GET", TX)) == 2


def test_a_long_retry_after_is_not_waited_for(fake_service, settings):
    settings.SVC_RETRY_AFTER_MAX = 5
    fake_service.route("GET", TX, Reply(429, {}, {"Retry-After": "120"}), Reply(200, {"id": "t1"}))
    with pytest.raises(ServiceRateLimitError) as caught:
        client.get_transaction("t1")
    assert caught.value.retry_after == 120.0 and caught.value.transient
    assert len(fake_service.requests_to("GET", TX)) == 1


def test_get_gives_up_after_the_configured_retries(fake_service, settings):
    settings.SVC_MAX_RETRIES = 2
    fake_service.route("GET", TX, Reply(503, {"message": "down"}))
    with pytest.raises(ServiceUnavailableError) as caught:
        client.get_transaction("t1")
    assert caught.value.status == 503 and "down" in caught.value.excerpt
    assert len(fake_service.requests_to("GET", TX)) == 3


@pytest.mark.parametrize("status", [503, 429, 500])
def test_response_patch_is_never_resent(fake_service, status):
    fake_service.route("PATCH", f"{TX}/response", Reply(status, {}, {"Retry-After": "0"}), Reply(200, {}))
    with pytest.raises(ServiceError) as caught:
        client.patch_response("t1", {"status": "processing"})
    assert caught.value.status == status
    assert len(fake_service.requests_to("PATCH", f"{TX}/response")) == 1


def test_client_errors_are_not_retried(fake_service):
    fake_service.route("GET", TX, Reply(404, {"message": "no such transaction"}))
    with pytest.raises(ServiceNotFoundError):
        client.get_transaction("t1")
    fake_service.route("PATCH", f"{TX}/response", Reply(400, {"message": "bad loanFormat"}))
    with pytest.raises(ServiceValidationError) as caught:
        client.patch_response("t1", {"status": "processing"})
    assert caught.value.body == {"message": "bad loanFormat"}
    assert len(fake_service.requests_to("GET", TX)) == 1


def test_connection_errors_are_retried_then_raised_from_the_cause(fake_service, settings, service_calls):
    with socket_closed_port() as port:
        settings.SVC_BASE_URL = f"http://127.0.0.1:{port}/svc"
        with pytest.raises(ServiceUnavailableError) as caught:
            client.get_transaction("t1")
    assert isinstance(caught.value.__cause__, requests.ConnectionError)
    assert [c["attempt"] for c in service_calls] == [1, 2, 3, 4]
    assert all(c["status"] is None and c["error"] for c in service_calls)


def socket_closed_port():
    import contextlib
    import socket

    @contextlib.contextmanager
    def port():
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        number = s.getsockname()[1]
        s.close()  # nothing listens there now
        yield number

    return port()


def test_every_call_has_the_configured_timeout(fake_service, settings, monkeypatch):
    settings.SVC_TIMEOUT = (1.5, 4.5)
    seen = []
    original = requests.Session.request

    def spy(self, method, url, **kwargs):
        seen.append((method, kwargs.get("timeout"), kwargs.get("allow_redirects")))
        return original(self, method, url, **kwargs)

    monkeypatch.setattr(requests.Session, "request", spy)
    fake_service.route("GET", TX, Reply(200, {"id": "t1"}))
    client.get_transaction("t1")
    assert seen == [("POST", (1.5, 4.5), False), ("GET", (1.5, 4.5), False)]


def test_an_answer_that_drips_ends_at_the_whole_exchange_deadline(fake_service, settings):
    """Each byte comes well within the read timeout; only the exchange's deadline (the sum of the
    connect and read timeouts, `partner.core.outbound`) ends the call, not the answer's last byte."""
    settings.SVC_TIMEOUT = (0.5, 0.5)
    server = socket.create_server(("127.0.0.1", 0))
    head = b"HTTP/1.1 200 OK\r\nX-Padding: " + b"p" * 40 + b"\r\n\r\n"

    def drip():
        connection, _ = server.accept()
        connection.recv(65536)
        with contextlib.suppress(OSError):  # the client went away
            for byte in head:
                connection.sendall(bytes([byte]))
                time.sleep(0.2)  # 40+ bytes: over 8 s when waited for to the end
        connection.close()

    threading.Thread(target=drip, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(ServiceUnavailableError):
        http.send("GET", f"http://127.0.0.1:{server.getsockname()[1]}/slow", session=http.session_api(), retry=False)
    assert time.monotonic() - started < 3
    server.close()


# redirects ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_are_errors_and_not_followed(fake_service, status):
    elsewhere = f"{fake_service.url}/elsewhere"
    fake_service.route("PATCH", f"{TX}/response", Reply(status, {}, {"Location": elsewhere}))
    fake_service.route("GET", TX, Reply(status, {}, {"Location": elsewhere}))
    with pytest.raises(ServiceError) as caught:
        client.patch_response("t1", {"status": "processing"})
    assert caught.value.status == status and not caught.value.transient
    with pytest.raises(ServiceError):
        client.get_transaction("t1")
    assert not [s for s in fake_service.seen if s.path.startswith("/elsewhere")]


# upload ----------------------------------------------------------------------------------------------------------
def slot(fake, **kwargs):
    return UploadSlot(
        id="r1",
        name="report.pdf",
        mime_type="application/pdf",
        location=f"{fake.url}/upload/r1",
        authorization=kwargs.get("authorization", "Upload one-time-auth-value"),
        raw={},
    )


def test_upload_sends_exactly_the_slot_authorization_and_type_never_the_bearer(fake_service):
    fake_service.route("GET", TX, Reply(200, {"id": "t1"}))
    fake_service.route("PUT", "/upload/r1", Reply(200, b""))
    client.get_transaction("t1")  # the API session now holds a bearer token in flight
    client.upload_resource(slot(fake_service), b"%PDF-1.4 bytes")
    [put] = fake_service.requests_to("PUT", "/upload/r1")
    assert put.headers["Authorization"] == "Upload one-time-auth-value"
    assert put.headers["Content-Type"] == "application/pdf"
    assert put.body == b"%PDF-1.4 bytes"
    assert "fake-access-token-1" not in str(put.headers)
    assert "Authorization" not in http.session_upload().headers


def test_netrc_is_ignored_for_api_and_upload(fake_service, tmp_path, monkeypatch):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login netrc-user password netrc-password\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HOME", str(tmp_path))
    fake_service.route("GET", TX, Reply(200, {"id": "t1"}))
    fake_service.route("PUT", "/upload/r1", Reply(200, b""))
    client.get_transaction("t1")
    client.upload_resource(slot(fake_service), b"x")
    assert fake_service.requests_to("GET", TX)[0].headers["Authorization"] == "Bearer fake-access-token-1"
    assert fake_service.requests_to("PUT", "/upload/r1")[0].headers["Authorization"] == "Upload one-time-auth-value"
    assert "netrc" not in str([s.headers for s in fake_service.seen])
    # and requests without trust_env=False would have used it:
    naive = requests.get(f"{fake_service.url}/probe", timeout=5)
    assert naive.status_code == 404
    assert fake_service.seen[-1].headers.get("Authorization", "").startswith("Basic ")


def test_upload_streams_a_file_and_resends_it_whole_after_503(fake_service, tmp_path):
    path = tmp_path / "report.pdf"
    content = os.urandom(300_000)
    path.write_bytes(content)
    fake_service.route("PUT", "/upload/r1", Reply(503, b""), Reply(200, b""))
    with path.open("rb") as handle:
        client.upload_resource(slot(fake_service), handle)
    puts = fake_service.requests_to("PUT", "/upload/r1")
    assert [p.body == content for p in puts] == [True, True]
    assert puts[1].headers["Content-Length"] == str(len(content))


def test_upload_of_a_non_seekable_stream_is_chunked_and_sent_once(fake_service):
    class Pipe(io.RawIOBase):
        def __init__(self, data):
            self.data = io.BytesIO(data)

        def readable(self):
            return True

        def seekable(self):
            return False

        def read(self, size=-1):
            return self.data.read(size)

    fake_service.route("PUT", "/upload/r1", Reply(503, b""))
    with pytest.raises(ServiceUnavailableError):
        client.upload_resource(slot(fake_service), Pipe(b"a" * 200_000))
    [put] = fake_service.requests_to("PUT", "/upload/r1")
    assert put.body == b"a" * 200_000 and put.headers.get("Transfer-Encoding") == "chunked"


def test_upload_refuses_a_slot_without_authorization_or_http_location(fake_service):
    with pytest.raises(RequestRefused):
        client.upload_resource(slot(fake_service, authorization=""), b"x")
    bad = UploadSlot(id="r", name="n", mime_type="a/b", location="file:///etc/passwd", authorization="x", raw={})
    with pytest.raises(RequestRefused):
        client.upload_resource(bad, b"x")
    with pytest.raises(TypeError):
        client.upload_resource(slot(fake_service), "text is not bytes")
    assert fake_service.seen == []


# signals and sessions --------------------------------------------------------------------------------------------
def test_signals_separate_service_calls_from_token_requests(fake_service, service_calls):
    fake_service.route("GET", TX, Reply(200, {"id": "t1"}))
    client.get_transaction("t1")
    client.get_transaction("t1")
    assert [(t["method"], t["status"]) for t in service_calls.tokens] == [("POST", 200)]
    assert [(c["method"], c["url"], c["status"]) for c in service_calls] == [("GET", fake_service.url + TX, 200)] * 2
    assert all(c["duration"] >= 0 for c in service_calls)


def test_one_session_per_process(monkeypatch):
    http.sessions_close()
    first = http.session_api()
    assert http.session_api() is first
    assert http.session_upload() is not first
    assert first.trust_env is False and http.session_upload().trust_env is False
    monkeypatch.setattr(os, "getpid", lambda: -12345)  # as in a forked Celery child
    assert http.session_api() is not first
    http.sessions_close()
