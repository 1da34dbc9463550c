"""POST /v1/webhooks on the lean path of config.wsgi (partner/inbox/webhook_wsgi.py): every check of
the intake still holds there, its answers are those of Django's whole stack header for header, and
every other request still goes through the whole middleware.

The application is called as a WSGI server calls it. Like Django's own handler it closes the
database connection at the end of a request when Django would (an open transaction, an error), so
these tests run outside a test transaction (`transaction=True`), as a server does.
"""

import io
import json
import threading

import pytest
from django.core.wsgi import get_wsgi_application
from django.db import OperationalError, connection, connections
from django.urls import resolve
from prometheus_client.parser import text_string_to_metric_families

import config.wsgi
from partner.core.metrics import metrics_text
from partner.inbox.models import Notification, NotificationState
from partner.inbox.webhook_wsgi import HANDLED_MIDDLEWARE, SKIPPED_MIDDLEWARE, WEBHOOK_PATH, WebhookApplication
from partner.platform.signatures import signature_compute
from tests.inbox.test_receive import notification, raw

pytestmark = pytest.mark.django_db(transaction=True)

# Differ on every request; compared by presence only.
PER_REQUEST = {"X-Request-ID", "X-Notification-Id"}


def call(app, body: bytes = b"", *, method="POST", path=WEBHOOK_PATH, chunked=False, **environ) -> dict:
    """One request through a WSGI application: {"status", "headers", "body"}."""
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8080",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8080",
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    if chunked:
        env["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(environ)
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = int(status.split()[0]), headers

    result = app(env, start_response)
    answer["body"] = b"".join(result)
    getattr(result, "close", lambda: None)()
    return answer


@pytest.fixture
def post(settings):
    """POST a body to /v1/webhooks through config.wsgi, signed with the first accepted secret (or `signature=`)."""

    def post(body: bytes, *, signature=None, app=None, **environ):
        signature = signature_compute(body, settings.SVC_SIGNING_SECRETS[0]) if signature is None else signature
        header = "HTTP_" + settings.SVC_SIGNATURE_HEADER.upper().replace("-", "_")
        extra = {header: signature} if signature else {}
        return call(app or config.wsgi.application, body, **extra, **environ)

    return post


def comparable(answer: dict) -> tuple:
    headers = sorted((name, "..." if name in PER_REQUEST else value) for name, value in answer["headers"])
    return answer["status"], headers, answer["body"]


def header(answer: dict, name: str) -> str | None:
    return next((value for key, value in answer["headers"] if key.lower() == name.lower()), None)


# ---- where requests go ------------------------------------------------------------------------------------------


def test_the_lean_path_serves_the_url_maps_webhook_and_knows_every_middleware(settings):
    match = resolve(WEBHOOK_PATH)
    assert (match.namespace, match.url_name) == ("inbox", "webhook-receive")
    assert set(settings.MIDDLEWARE) <= {*HANDLED_MIDDLEWARE, *SKIPPED_MIDDLEWARE}
    assert config.wsgi.webhook_application.enabled


def test_every_other_request_goes_through_the_whole_middleware(post):
    # CSRF (skipped by the lean path) still refuses a POST without a token elsewhere.
    assert call(config.wsgi.application, b"username=a", path="/admin/login/", CONTENT_TYPE="x").get("status") == 403
    # GET of the webhook's URL is DRF's (405), a trailing slash is the URL map's (404).
    assert call(config.wsgi.application, method="GET")["status"] == 405
    assert post(raw(notification()), PATH_INFO="/v1/webhooks/")["status"] == 404
    assert not Notification.objects.exists()


def test_an_unknown_middleware_turns_the_lean_path_off(settings, post):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    lean = WebhookApplication(config.wsgi.django_application)
    assert not lean.enabled
    seen = []
    lean.django = lambda environ, start_response: seen.append(environ["PATH_INFO"]) or [b""]
    post(raw(notification()), app=lean)
    assert seen == [WEBHOOK_PATH]


# ---- the same answers as Django's whole stack --------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        "accepted",
        "duplicate",
        "unsigned",
        "wrong signature",
        "not json",
        "too large",
        "chunked",
        "bad host",
        "request id",
    ],
)
def test_answers_are_those_of_the_whole_stack(post, settings, case):
    def answer(app, tag):
        body = raw(notification(f"txn-{tag}"))
        environ = {
            "unsigned": {"signature": ""},
            "wrong signature": {"signature": signature_compute(b"other", "x")},
            "too large": {"CONTENT_LENGTH": str(settings.WEBHOOK_MAX_BYTES + 1)},
            "chunked": {"CONTENT_LENGTH": "", "HTTP_TRANSFER_ENCODING": "chunked"},  # and a server that cannot: 411
            "bad host": {"HTTP_HOST": "evil.example"},
            "request id": {"HTTP_X_REQUEST_ID": "req-42"},
        }.get(case, {})
        if case == "not json":
            body = b"[1, 2]"
        if case == "duplicate":
            post(body, app=app)
        return post(body, app=app, **environ)

    lean, whole = answer(config.wsgi.application, "lean"), answer(config.wsgi.django_application, "whole")
    assert comparable(lean) == comparable(whole)
    if case == "request id":
        assert header(lean, "X-Request-ID") == "req-42"


def test_the_security_headers_are_there_and_https_gets_hsts(post, settings):
    settings.SECURE_HSTS_SECONDS = 3600
    whole = get_wsgi_application()
    lean = WebhookApplication(whole)
    plain = post(raw(notification("a")), app=lean)
    secure = post(raw(notification("b")), app=lean, **{"wsgi.url_scheme": "https"})
    assert comparable(secure) == comparable(post(raw(notification("c")), app=whole, **{"wsgi.url_scheme": "https"}))
    for answer in (plain, secure):
        assert header(answer, "X-Content-Type-Options") == "nosniff"
        assert header(answer, "X-Frame-Options") == "DENY"
        assert header(answer, "Referrer-Policy") == "same-origin"
    assert header(plain, "Strict-Transport-Security") is None
    assert header(secure, "Strict-Transport-Security").startswith("max-age=3600")


def test_plain_http_is_redirected_and_a_forwarded_scheme_believed_from_trusted_proxies_only(post, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    # Handlers made under these settings, as a server starts them (the middleware reads them when made).
    whole = get_wsgi_application()
    lean = WebhookApplication(whole)
    claimed = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    redirected = post(raw(notification("a")), app=lean)
    assert comparable(redirected) == comparable(post(raw(notification("a")), app=whole))
    assert redirected["status"] == 301 and header(redirected, "Location").startswith("https://")
    assert post(raw(notification("b")), app=lean, REMOTE_ADDR="203.0.113.9", **claimed)["status"] == 301
    assert post(raw(notification("c")), app=lean, REMOTE_ADDR="10.1.2.3", **claimed)["status"] == 202
    assert list(Notification.objects.values_list("resource_id", "remote_addr")) == [("c", "198.51.100.7")]


# ---- every check of the intake -----------------------------------------------------------------------------------


def test_accepted_is_stored_before_the_answer_with_its_raw_bytes_and_no_signature_header(post, settings):
    body = (
        b'{ "meta":{"resourceRef":"http://x/y","resourceId":"txn-Jos\xc3\xa9",'
        b'"resourceType":"urn:svc:platform:transaction"},"eventType":"created" ,"eventTime":"2026-11-22T10:00:00Z"}'
    )
    answer = post(body, HTTP_USER_AGENT="svc-webhooks/1", HTTP_X_ODD="a\x00b")
    assert answer["status"] == 202 and answer["body"] == b""
    stored = Notification.objects.get()
    assert header(answer, "X-Notification-Id") == str(stored.pk)
    assert stored.body.encode() == body and stored.resource_id == "txn-José"
    assert stored.state == NotificationState.RECEIVED
    assert stored.headers["User-Agent"] == "svc-webhooks/1" and stored.headers["X-Odd"] == "a\\x00b"
    assert settings.SVC_SIGNATURE_HEADER.lower() not in {name.lower() for name in stored.headers}
    assert stored.created_at == stored.updated_at == stored.received_at and stored.attempts == 0


@pytest.mark.parametrize("tamper", ["reserialised", "flipped byte", "missing", "not base64"])
def test_the_signature_is_checked_over_the_raw_bytes(post, settings, tamper):
    body = raw(notification())
    secret = settings.SVC_SIGNING_SECRETS[0]
    signature = {
        "reserialised": signature_compute(json.dumps(json.loads(body), separators=(",", ":")).encode(), secret),
        "flipped byte": signature_compute(body.replace(b"txn-1", b"txn-2"), secret),
        "missing": "",
        "not base64": "not-base64!!",
    }[tamper]
    answer = post(body, signature=signature)
    assert answer["status"] == 401
    assert json.loads(answer["body"]) == {"message": "Invalid or missing signature"}
    assert not Notification.objects.exists()


def test_the_size_limit_holds_with_and_without_a_content_length(post, settings):
    settings.WEBHOOK_MAX_BYTES = 1024
    body = raw(notification(padding="x" * 2000))
    assert post(body)["status"] == 413
    assert post(body, chunked=True, CONTENT_LENGTH="", **{"wsgi.input_terminated": True})["status"] == 413
    small = raw(notification("txn-chunked"))
    assert post(small, chunked=True, CONTENT_LENGTH="", **{"wsgi.input_terminated": True})["status"] == 202
    assert list(Notification.objects.values_list("resource_id", flat=True)) == ["txn-chunked"]


@pytest.mark.parametrize("body", [b"not json", b"[1]", b'{"eventType": "created"}', b'{"meta": {"a": [[[[]]]]}}'])
def test_a_signed_body_that_is_not_a_notification_is_400(post, body):
    answer = post(body)
    assert answer["status"] == 400
    assert json.loads(answer["body"])["message"].startswith("Not a webhook notification: ")
    assert not Notification.objects.exists()


def test_a_duplicate_is_told_by_the_unique_key_and_stored_once(post):
    body = raw(notification(eventId="evt-1"))
    first, second = post(body), post(body)
    assert first["status"] == second["status"] == 202
    assert header(first, "X-Notification-Id") == header(second, "X-Notification-Id")
    assert Notification.objects.get().duplicates == 1


def test_simultaneous_duplicates_are_stored_once(post):
    body = raw(notification("txn-race"))
    barrier, statuses = threading.Barrier(4), []

    def deliver():
        try:
            barrier.wait()
            statuses.append(post(body)["status"])
        finally:
            connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [202] * 4
    assert Notification.objects.get().duplicates == 3


def _refuse_inserts(execute, sql, params, many, context):
    if sql.startswith("INSERT INTO") and Notification._meta.db_table in sql:
        raise OperationalError("server closed the connection unexpectedly")
    return execute(sql, params, many, context)


def test_the_database_away_is_503_with_retry_after_and_no_row_and_the_redelivery_is_stored_once(post):
    body = raw(notification("txn-db-down"))
    with connection.execute_wrapper(_refuse_inserts):
        answer = post(body)
    assert answer["status"] == 503 and header(answer, "Retry-After")
    assert json.loads(answer["body"]) == {"message": "Temporarily unavailable, retry later"}
    assert not Notification.objects.exists()
    assert post(body)["status"] == 202
    assert Notification.objects.count() == 1


def test_a_connection_that_died_since_the_last_request_is_replaced_and_the_webhook_stored(post, monkeypatch):
    """The INSERT is the health check: a kept connection that fails it is closed and the INSERT tried once more."""
    post(raw(notification("txn-before")))  # a connection kept from a request
    db, failures = connections["default"], []

    def dies_once(execute, sql, params, many, context):
        if not failures and sql.startswith("INSERT INTO"):
            failures.append(sql)
            monkeypatch.setattr(db, "is_usable", lambda: False)  # what a dead connection answers
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with db.execute_wrapper(dies_once):
        answer = post(raw(notification("txn-after")))
    assert answer["status"] == 202 and len(failures) == 1
    assert Notification.objects.filter(resource_id="txn-after").count() == 1


def test_a_new_connection_that_fails_is_not_tried_again(post):
    connections["default"].close()
    with connection.execute_wrapper(_refuse_inserts):
        assert post(raw(notification()))["status"] == 503


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL (a server session to end)")
def test_a_terminated_postgresql_session_costs_no_503(post):
    import psycopg

    post(raw(notification("txn-before")))
    pid = connections["default"].connection.info.backend_pid
    params = connections["default"].get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "context"}, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    assert post(raw(notification("txn-after")))["status"] == 202
    assert Notification.objects.filter(resource_id="txn-after").count() == 1


# ---- what else the webhook promises ------------------------------------------------------------------------------


def webhooks_counted() -> dict:
    return {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(metrics_text(scraped=False).decode())
        for sample in family.samples
        if sample.name == "partner_webhooks_received_total"
    }


def test_each_answer_is_counted_by_status(post):
    before = webhooks_counted()
    post(raw(notification()))
    post(b"{}", signature="bm90IGEgc2lnbmF0dXJl")
    post(b"[1]")
    after = webhooks_counted()
    for status in ("202", "401", "400"):
        assert after.get(status, 0) - before.get(status, 0) == 1, status


def test_something_unexpected_is_djangos_logged_500(post, monkeypatch, caplog):
    import partner.inbox.webhook_wsgi as lean

    def broken(request):
        raise RuntimeError("a bug")

    monkeypatch.setattr(lean, "webhook_answer", broken)
    answer = post(raw(notification()))
    assert answer["status"] == 500 and header(answer, "X-Frame-Options") == "DENY" and header(answer, "X-Request-ID")
    assert any(record.name == "django.request" and record.exc_info for record in caplog.records)


def test_a_refused_answer_is_logged_as_django_logs_it(post, caplog):
    post(raw(notification()), signature="AAAA")
    assert [r.getMessage() for r in caplog.records if r.name == "django.request"] == ["Unauthorized: /v1/webhooks"]
