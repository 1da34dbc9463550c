"""The outbound module's own promises, over a real local HTTP server: a redirect is the answer, not
followed; every exchange is counted by channel and outcome and noted as a try (the start of an
error's answer kept, redacted; a 2xx's not); a bounded exchange reads no more than KEPT."""

import pytest
from prometheus_client import REGISTRY

from partner.core import outbound
from partner.core.logging import secret_register
from tests.helpers.servers import FakeServer, Reply


@pytest.fixture
def server():
    running = FakeServer()
    yield running
    running.close()


def counted(channel: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("partner_outbound_calls_total", {"channel": channel, "outcome": outcome}) or 0


def test_a_redirect_is_the_answer_and_every_exchange_is_noted_and_counted(server):
    server.route("GET", "/moved", Reply(302, {"why": "elsewhere"}, {"Location": "http://169.254.169.254/"}))
    server.route("GET", "/fine", Reply(200, {"secret-ish": "data"}))
    before = counted("test", "3xx"), counted("test", "2xx")
    with outbound.tries_noted() as tries, outbound.one_off() as session:
        moved = outbound.exchange("GET", f"{server.url}/moved", channel="test", session=session, timeout=(1, 1))
        fine = outbound.exchange("GET", f"{server.url}/fine", channel="test", session=session, timeout=(1, 1))
    assert (moved.status_code, fine.status_code) == (302, 200)
    assert [seen.path for seen in server.seen] == ["/moved", "/fine"]  # the redirect was not followed
    assert [(t.status, t.succeeded) for t in tries] == [(302, False), (200, True)]
    assert "elsewhere" in tries[0].answer and tries[1].answer == ""
    assert (counted("test", "3xx"), counted("test", "2xx")) == (before[0] + 1, before[1] + 1)


def test_an_error_answer_is_kept_redacted_and_cut_to_the_kept_length(server):
    secret_register("s3cr3t-value-of-a-test")
    server.route("GET", "/err", Reply(400, b"s3cr3t-value-of-a-test " + b"x" * 5000))
    with outbound.tries_noted() as tries, outbound.one_off() as session:
        outbound.exchange("GET", f"{server.url}/err", channel="test", session=session, timeout=(1, 1))
    [tried] = tries
    assert "s3cr3t-value-of-a-test" not in tried.answer and len(tried.answer) <= outbound.KEPT


def test_a_bounded_exchange_keeps_the_start_only_and_never_raises(server):
    server.route("POST", "/big", Reply(500, b"y" * 100_000))
    with outbound.one_off() as session:
        big = outbound.exchange_kept("POST", f"{server.url}/big", channel="test", session=session, deadline=2)
        gone = outbound.exchange_kept("POST", "http://127.0.0.1:9/x", channel="test", session=session, deadline=2)
    assert big.status == 500 and big.answer == "y" * outbound.KEPT
    assert gone.status is None and gone.answer.startswith("connection refused")


def test_kept_is_the_one_length_of_a_kept_text():
    assert outbound.kept("z" * (outbound.KEPT + 5)) == "z" * outbound.KEPT
    assert outbound.kept(None) == "" and outbound.kept(ValueError("why")) == "why"


def test_the_cause_of_a_failed_tls_handshake_is_told_plainly():
    import ssl

    import requests

    handshake = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    handshake.reason = "WRONG_VERSION_NUMBER"  # ssl's reason is a string, not an exception
    failed = requests.exceptions.SSLError(handshake)
    assert outbound.cause_of(failed, limit=5).startswith("TLS handshake failed")
    assert outbound.address_refused(failed) is None


def test_a_fenced_request_whose_check_refuses_sends_nothing(server):
    """`fenced`: the check runs after the connection is made and before the request's first byte, and
    what it raises reaches the caller; nothing reaches the server."""

    class Stopped(Exception):
        pass

    def refuse():
        raise Stopped("the lease ran out")

    server.route("PATCH", "/response", Reply(200, {}))
    with outbound.one_off() as session:
        with outbound.fenced(refuse), pytest.raises(Stopped):
            outbound.exchange("PATCH", f"{server.url}/response", channel="test", session=session, timeout=(1, 1))
        assert server.seen == []
        with outbound.fenced(lambda: None):
            outbound.exchange("PATCH", f"{server.url}/response", channel="test", session=session, timeout=(1, 1))
    assert [seen.path for seen in server.seen] == ["/response"]


def test_the_ca_bundle_an_operator_names_is_the_trust_and_no_proxy_is_taken(monkeypatch):
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/partner/their-ca.pem")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    with outbound.one_off() as session:
        assert session.verify == "/etc/partner/their-ca.pem" and session.trust_env is False
    monkeypatch.delenv("REQUESTS_CA_BUNDLE")
    with outbound.one_off() as session:
        assert session.verify is True


def test_every_exchange_s_deadline_is_kept_by_the_process_s_one_watchdog(server, monkeypatch):
    """No thread is started per exchange (a timer's start cost a call 10-40 ms in a worker of 64
    threads wanting the GIL): the process's one watchdog thread keeps every deadline, and one that
    passes still ends its exchange while an earlier-ending one waits behind a later one."""
    import socket
    import threading
    import time

    server.route("POST", "/fine", Reply(200, {}))
    with outbound.one_off() as session:  # the watchdog started, if no test started it before
        outbound.exchange_kept("POST", f"{server.url}/fine", channel="test", session=session, deadline=30)
    started, caller, start = [], threading.current_thread(), threading.Thread.start

    def start_seen(thread):  # a thread started by this test's exchanges (not by the servers)
        if threading.current_thread() is caller:
            started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_seen)

    silent = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog), never answers
    slow = f"http://127.0.0.1:{silent.getsockname()[1]}/silent"
    with outbound.one_off() as session:
        for _ in range(5):
            assert (
                outbound.exchange_kept(
                    "POST", f"{server.url}/fine", channel="test", session=session, deadline=30
                ).status
                == 200
            )
        began = time.monotonic()
        ended = outbound.exchange_kept("POST", slow, channel="test", session=session, deadline=0.5)
    assert ended.status is None and time.monotonic() - began < 5
    silent.close()
    assert started == []
    assert [thread.name for thread in threading.enumerate()].count("outbound-deadlines") == 1
