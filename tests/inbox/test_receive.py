"""POST /v1/webhooks as production runs it: through `config.wsgi` (tests/inbox/front_door.py).

The one view (`partner/inbox/views.py`) behind the middleware a webhook needs
(`partner/inbox/webhook_wsgi.py`): the signature over raw bytes, storage before the answer, dedupe,
size and shape, the answers header for header, the middleware's work, the database away.
"""

import json
import threading
from datetime import timedelta
from unittest import mock

import pytest
import requests
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError, connection, connections
from django.urls import resolve
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

import config.wsgi
from partner.core.metrics import metrics_text
from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notifications_relay
from partner.inbox.views import webhook_receive_view
from partner.inbox.webhook_wsgi import SKIPPED_MIDDLEWARE, WEBHOOK_PATH, WebhookHandler, webhook_middleware
from partner.platform.signatures import signature_compute
from tests.helpers.front_door import wsgi_call
from tests.helpers.webhooks import notification, raw

pytestmark = pytest.mark.django_db(transaction=True)


# ---- one front door ------------------------------------------------------------------------------------------------


def test_the_webhook_is_the_url_maps_view_behind_every_middleware_but_the_skipped(settings):
    match = resolve(WEBHOOK_PATH)
    assert (match.namespace, match.url_name, match.func) == ("v1", "webhook-receive", webhook_receive_view)
    assert webhook_middleware() == [name for name in settings.MIDDLEWARE if name not in SKIPPED_MIDDLEWARE]
    assert set(SKIPPED_MIDDLEWARE) <= set(settings.MIDDLEWARE)  # a name no longer there is a stale rule
    assert isinstance(config.wsgi.webhook_application, WebhookHandler)


class Stamp:
    """A middleware added after this was written."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response["X-Stamp"] = "1"
        return response


def test_a_middleware_added_later_runs_for_the_webhook_too(signed_post, settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "tests.inbox.test_receive.Stamp"]
    assert signed_post(raw(notification()), app=WebhookHandler()).headers["X-Stamp"] == "1"


def test_a_middleware_hooked_around_the_view_stops_the_handler_at_start(settings):
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.contrib.admindocs.middleware.XViewMiddleware"]
    with pytest.raises(ImproperlyConfigured, match="process_view"):
        WebhookHandler()


def test_every_other_request_goes_through_the_whole_middleware(signed_post):
    # CSRF (skipped for the webhook) still refuses a POST without a token elsewhere.
    assert wsgi_call(b"username=a", path="/admin/login/", CONTENT_TYPE="x").status_code == 403
    # Any other method gets an API view's 405 in our error shape; a trailing slash is the URL map's 404.
    refused = wsgi_call(method="GET")
    assert refused.status_code == 405 and refused.json() == {"message": 'Method "GET" not allowed.', "extra": {}}
    assert refused.headers["Allow"] == "POST, OPTIONS"
    assert signed_post(raw(notification()), PATH_INFO="/v1/webhooks/").status_code == 404
    assert not Notification.objects.exists()


def test_accepted_and_refused_answers_header_for_header(signed_post):
    accepted = signed_post(raw(notification()), HTTP_X_REQUEST_ID="req-42")
    assert accepted.status_code == 202 and accepted.content == b""
    assert dict(accepted.headers) == {
        "Allow": "POST, OPTIONS",
        "Vary": "Accept",
        "X-Notification-Id": str(Notification.objects.get().pk),
        "Content-Length": "0",
        "X-Request-ID": "req-42",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
    refused = signed_post(raw(notification("txn-2")), signature="AAAA")
    assert refused.status_code == 401
    assert refused.content == b'{"message":"Invalid or missing signature"}'
    assert {name: value for name, value in refused.headers.items() if name != "X-Request-ID"} == {
        "Content-Type": "application/json",
        "Allow": "POST, OPTIONS",
        "Vary": "Accept",
        "Content-Length": str(len(refused.content)),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
        "Cross-Origin-Opener-Policy": "same-origin",
    }
    assert len(refused.headers["X-Request-ID"]) == 32  # made for a request that came without one


def test_https_gets_hsts_and_a_host_not_allowed_is_refused(signed_post, settings):
    settings.SECURE_HSTS_SECONDS = 3600
    handler = WebhookHandler()  # made under these settings, as a server starts it
    plain = signed_post(raw(notification("a")), app=handler)
    secure = signed_post(raw(notification("b")), app=handler, **{"wsgi.url_scheme": "https"})
    assert plain.status_code == secure.status_code == 202
    assert "Strict-Transport-Security" not in plain.headers
    assert secure.headers["Strict-Transport-Security"] == "max-age=3600"
    bad_host = signed_post(raw(notification("c")), app=handler, HTTP_HOST="evil.example")
    assert bad_host.status_code == 400 and bad_host.headers["X-Request-ID"]
    assert sorted(Notification.objects.values_list("resource_id", flat=True)) == ["a", "b"]


def test_plain_http_is_redirected_and_a_forwarded_scheme_believed_from_trusted_proxies_only(signed_post, settings):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.TRUSTED_PROXIES = ["10.0.0.0/8"]
    handler = WebhookHandler()  # made under these settings, as a server starts it
    claimed = {"HTTP_X_FORWARDED_PROTO": "https", "HTTP_X_FORWARDED_FOR": "198.51.100.7"}
    redirected = signed_post(raw(notification("a")), app=handler)
    assert redirected.status_code == 301 and redirected.headers["Location"] == "https://127.0.0.1:8080/v1/webhooks"
    assert signed_post(raw(notification("b")), app=handler, REMOTE_ADDR="203.0.113.9", **claimed).status_code == 301
    assert signed_post(raw(notification("c")), app=handler, REMOTE_ADDR="10.1.2.3", **claimed).status_code == 202
    assert list(Notification.objects.values_list("resource_id", "remote_addr")) == [("c", "198.51.100.7")]


def test_the_request_id_is_on_every_log_line_of_the_request(signed_post, caplog):
    from partner.core.logging import request_id_var

    seen = []
    caplog.handler.addFilter(lambda record: seen.append((record.name, request_id_var.get())) or True)
    signed_post(raw(notification()), signature="AAAA", HTTP_X_REQUEST_ID="req-7")
    assert ("django.request", "req-7") in seen


# ---- every check of the intake -------------------------------------------------------------------------------------


def test_accepted_is_stored_before_the_answer_with_its_raw_bytes_and_no_signature_header(signed_post, settings):
    body = (
        b'{ "meta":{"resourceRef":"http://x/y","resourceId":"txn-Jos\xc3\xa9",'
        b'"resourceType":"urn:svc:platform:transaction"},"eventType":"created" ,"eventTime":"2026-11-22T10:00:00Z"}'
    )
    answer = signed_post(body, HTTP_USER_AGENT="svc-webhooks/1", HTTP_X_ODD="a\x00b")
    assert answer.status_code == 202
    stored = Notification.objects.get()
    assert answer.headers["X-Notification-Id"] == str(stored.pk)
    assert stored.body.encode() == body and stored.resource_id == "txn-José"
    assert stored.event_type == "created" and stored.state == NotificationState.RECEIVED  # for the relay
    assert stored.headers["User-Agent"] == "svc-webhooks/1" and stored.headers["X-Odd"] == "a\\x00b"
    assert settings.SVC_SIGNATURE_HEADER.lower() not in {name.lower() for name in stored.headers}
    assert stored.created_at == stored.updated_at == stored.received_at and stored.attempts == 0


def test_the_insert_adapts_each_webhook_s_values_per_webhook_and_a_constant_default_once(signed_post):
    """Every value a webhook brings, and `now`, is adapted by its field on every webhook; a default that is
    a constant (attempts, duplicates, last_error, the empty dates) was adapted by its field when the INSERT
    was written, and is stored all the same (`intake.NotificationInsert`)."""
    from django.db.models import Field

    signed_post(raw(notification("txn-first")))  # the INSERT written for this database
    adapted, prep_save = [], Field.get_db_prep_save

    def counted(field, value, connection):
        adapted.append(field.attname)
        return prep_save(field, value, connection)

    with mock.patch.object(Field, "get_db_prep_save", counted):
        assert signed_post(raw(notification("txn-second"))).status_code == 202
    constant = {"attempts", "duplicates", "last_error", "claimed_until", "enqueued_at", "processed_at"}
    assert not constant & set(adapted), adapted
    given = {"dedupe_key", "event_id", "resource_type", "resource_id", "event_type", "event_time", "product_name"}
    given |= {"resource_ref", "body", "headers", "remote_addr", "state", "created_at", "updated_at", "received_at"}
    assert sorted(adapted) == sorted(given)
    stored = Notification.objects.get(resource_id="txn-second")
    assert (stored.attempts, stored.duplicates, stored.last_error) == (0, 0, "")
    assert stored.claimed_until is stored.enqueued_at is stored.processed_at is None


def test_a_product_named_by_the_notification_is_stored(signed_post):
    assert signed_post(raw(notification())).status_code == 202
    assert Notification.objects.get().product_name == "address-verification"


@pytest.mark.parametrize("tamper", ["reserialised", "flipped byte"])
def test_the_signature_is_checked_over_the_raw_bytes(signed_post, settings, tamper):
    body = raw(notification())
    secret = settings.SVC_SIGNING_SECRETS[0]
    signature = {
        "reserialised": signature_compute(json.dumps(json.loads(body), separators=(",", ":")).encode(), secret),
        "flipped byte": signature_compute(body.replace(b"txn-1", b"txn-2"), secret),
    }[tamper]
    answer = signed_post(body, signature=signature)
    assert answer.status_code == 401 and answer.json() == {"message": "Invalid or missing signature"}
    assert not Notification.objects.exists()


@pytest.mark.parametrize(
    "signature",
    ["", "not-base64!!", "AAAA", signature_compute(b"other body", "sandbox-webhook-signing-secret"), "sha256=abc"],
)
def test_missing_or_wrong_signature_is_401_and_stores_nothing(signed_post, signature):
    body = raw(notification())
    answer = signed_post(body, signature=signature)
    assert answer.status_code == 401
    assert body not in answer.content
    assert not Notification.objects.exists()


def test_rotation_accepts_every_configured_secret(signed_post, settings):
    from partner.inbox.intake import signing_secrets_forget

    settings.SVC_SIGNING_SECRETS = ["new-secret-2026", "old-secret-2025"]
    signing_secrets_forget()
    assert signed_post(raw(notification("a")), secret="old-secret-2025").status_code == 202
    assert signed_post(raw(notification("b")), secret="new-secret-2026").status_code == 202
    assert signed_post(raw(notification("c")), secret="retired-secret").status_code == 401
    signing_secrets_forget()


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"not json at all", "not JSON"),
        (b"[1, 2, 3]", "not a JSON object"),
        (b'{"eventType": "created"}', "meta"),
        (b'{"meta": {"a": [[[[]]]]}}', "required"),
        (json.dumps({**notification(), "eventTime": "yesterday"}).encode(), "eventTime"),
        # Well formed, not a date (found by the fuzz test: these raised a 500).
        (json.dumps({**notification(), "eventTime": "2026-13-01T00:00:00Z"}).encode(), "eventTime"),
        (json.dumps({**notification(), "eventTime": "0100-3-46T0:0:9"}).encode(), "eventTime"),
        (b"\xff\xfe\x00", "not JSON"),
        # JSON, but UTF-16: json.loads takes it, the stored text could not (was a 500).
        (json.dumps(notification()).encode("utf-16"), "not JSON"),
    ],
)
def test_signed_but_not_a_notification_is_400_and_stores_nothing(signed_post, body, reason):
    answer = signed_post(body)
    assert answer.status_code == 400
    assert answer.json()["message"].startswith("Not a webhook notification: ")
    assert reason in answer.json()["message"]
    assert not Notification.objects.exists()


def test_the_size_limit_holds_with_and_without_a_content_length(signed_post, settings):
    settings.WEBHOOK_MAX_BYTES = 1024
    body = raw(notification(padding="x" * 2000))
    assert signed_post(body).json() == {"message": "Request body too large"}
    assert signed_post(body).status_code == 413
    terminated = {"chunked": True, "CONTENT_LENGTH": "", "wsgi.input_terminated": True}
    assert signed_post(body, **terminated).status_code == 413
    assert signed_post(raw(notification("txn-chunked")), **terminated).status_code == 202
    assert list(Notification.objects.values_list("resource_id", flat=True)) == ["txn-chunked"]


def test_a_chunked_body_a_server_cannot_hand_over_is_411(signed_post):
    answer = signed_post(raw(notification()), chunked=True, CONTENT_LENGTH="")
    assert answer.status_code == 411 and answer.json() == {"message": "A Content-Length is required"}
    assert not Notification.objects.exists()


def test_duplicate_delivery_is_accepted_and_stored_once(signed_post):
    body = raw(notification(eventId="evt-1"))
    first, second = signed_post(body), signed_post(body)
    assert first.status_code == second.status_code == 202
    assert first.headers["X-Notification-Id"] == second.headers["X-Notification-Id"]
    assert Notification.objects.get().duplicates == 1


def test_event_id_decides_what_is_a_duplicate(signed_post):
    first = notification(eventId="evt-1")
    same_id_other_time = {**notification(eventId="evt-1"), "eventTime": "2026-11-22T11:00:00Z"}
    other_id = notification(eventId="evt-2")
    for body in (first, same_id_other_time, other_id):
        assert signed_post(raw(body)).status_code == 202
    assert Notification.objects.count() == 2


def test_unknown_types_are_stored_ignored_and_never_handed_to_the_broker(signed_post, tasks_sent):
    answer = signed_post(raw(notification(resource_type="urn:svc:platform:something-else", event_type="updated")))
    assert answer.status_code == 202
    assert Notification.objects.get().state == NotificationState.IGNORED
    assert notifications_relay() == 0
    assert tasks_sent == []


def webhooks_unhandled_counted() -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(metrics_text(scraped=False).decode())
        for sample in family.samples
        if sample.name == "partner_webhooks_unhandled_total"
    )


def test_a_webhook_of_a_type_we_do_not_handle_is_stored_answered_counted_and_shown(signed_post, staff):
    # The service's URN words are not the configured ones: every webhook of a misconfigured profile.
    before = webhooks_unhandled_counted()
    foreign = raw(notification("txn-foreign", resource_type="urn:acme:lending:transaction"))
    assert signed_post(foreign).status_code == 202
    assert signed_post(foreign).status_code == 202  # the service's retry: stored and counted once
    assert signed_post(raw(notification("txn-ours"))).status_code == 202  # handled: not counted
    long_ago = Notification.objects.create(
        dedupe_key="old", resource_type="urn:other:x", resource_id="old", event_type="created", state="ignored"
    )
    Notification.objects.filter(pk=long_ago.pk).update(received_at=timezone.now() - timedelta(hours=2))

    stored = Notification.objects.get(resource_id="txn-foreign")
    assert (stored.state, stored.duplicates, stored.resource_type) == ("ignored", 1, "urn:acme:lending:transaction")
    assert webhooks_unhandled_counted() - before == 1

    # The dashboard's attention list: the last hour's, with their types, linked to the inbox's list.
    page = staff.get("/admin/dashboard/")
    (card,) = [c for c in page.context["cards"] if c["label"] == "Webhooks of a type we do not handle"]
    assert (card["figure"], card["alert"]) == (1, True)
    assert card["note"] == "last hour: urn:acme:lending:transaction created (1)"
    assert "Webhooks of a type we do not handle" in page.content.decode()
    listed = staff.get(card["link"]).content.decode()
    assert "txn-foreign" in listed and "txn-ours" not in listed and ">old<" not in listed


def test_simultaneous_duplicates_are_stored_once(signed_post):
    body = raw(notification("txn-race"))
    barrier, statuses = threading.Barrier(4), []

    def deliver():
        try:
            barrier.wait()
            statuses.append(signed_post(body).status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [202] * 4
    assert Notification.objects.get().duplicates == 3


def test_a_live_server_answers_through_the_same_view(live_server, settings):
    """Over real HTTP (Django's own server and its whole middleware): the same view, the same answer."""
    body = raw(notification("txn-live"))
    response = requests.post(
        f"{live_server.url}/v1/webhooks",
        data=body,
        headers={settings.SVC_SIGNATURE_HEADER: signature_compute(body, settings.SVC_SIGNING_SECRETS[0])},
        timeout=30,
    )
    assert response.status_code == 202
    assert response.headers["X-Notification-Id"] == str(Notification.objects.get(resource_id="txn-live").pk)


def test_the_request_publishes_nothing_so_a_broker_outage_changes_nothing(signed_post, broker_down, monkeypatch):
    """The broker is down and every publish, on commit or not, is watched: the request makes none."""
    from config.celery import app

    attempts = []
    send_task = app.send_task

    def watched(name, *args, **kwargs):
        attempts.append(name)
        return send_task(name, *args, **kwargs)

    monkeypatch.setattr(app, "send_task", watched)
    answer = signed_post(raw(notification("txn-broker-down")))

    assert answer.status_code == 202
    assert Notification.objects.get().state == NotificationState.RECEIVED  # left for the relay
    assert attempts == []


# ---- the database away ---------------------------------------------------------------------------------------------


def _refuse_inserts(execute, sql, params, many, context):
    if sql.startswith("INSERT INTO") and Notification._meta.db_table in sql:
        raise OperationalError("server closed the connection unexpectedly")
    return execute(sql, params, many, context)


def test_the_database_away_is_503_with_retry_after_and_no_row_and_the_redelivery_is_stored_once(signed_post):
    body = raw(notification("txn-db-down"))
    with connection.execute_wrapper(_refuse_inserts):
        answer = signed_post(body)
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    assert answer.json() == {"message": "Temporarily unavailable, retry later"}
    assert not Notification.objects.exists()
    assert signed_post(body).status_code == 202
    assert Notification.objects.count() == 1


def test_a_connection_that_died_since_the_last_request_is_replaced_and_the_webhook_stored(signed_post, monkeypatch):
    """The INSERT is the health check: a kept connection that fails it is closed and the INSERT tried once more."""
    signed_post(raw(notification("txn-before")))  # a connection kept from a request
    db, failures = connections["default"], []

    def dies_once(execute, sql, params, many, context):
        if not failures and sql.startswith("INSERT INTO"):
            failures.append(sql)
            monkeypatch.setattr(db, "is_usable", lambda: False)  # what a dead connection answers
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with db.execute_wrapper(dies_once):
        answer = signed_post(raw(notification("txn-after")))
    assert answer.status_code == 202 and len(failures) == 1
    assert Notification.objects.filter(resource_id="txn-after").count() == 1


def test_a_new_connection_that_fails_is_not_tried_again(signed_post):
    connections["default"].close()
    with connection.execute_wrapper(_refuse_inserts):
        assert signed_post(raw(notification())).status_code == 503


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL (a server session to end)")
def test_a_terminated_postgresql_session_costs_no_503(signed_post):
    import psycopg

    signed_post(raw(notification("txn-before")))
    pid = connections["default"].connection.info.backend_pid
    params = connections["default"].get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "context"}, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    assert signed_post(raw(notification("txn-after"))).status_code == 202
    assert Notification.objects.filter(resource_id="txn-after").count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL (a server session to end)")
def test_the_database_away_for_real_is_503_and_the_redelivery_is_stored(signed_post, monkeypatch):
    """No execute wrapper here: the driver's own errors become Django's (Django's cursor), so the answer is
    the 503 (its session ended, no server to reconnect to)."""
    import psycopg

    body = raw(notification("txn-away"))
    signed_post(raw(notification("txn-before")))  # a connection kept from a request
    db = connections["default"]
    pid = db.connection.info.backend_pid
    params = db.get_connection_params()
    with psycopg.connect(**{k: v for k, v in params.items() if k != "context"}, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    monkeypatch.setitem(db.settings_dict, "HOST", "127.0.0.1")
    monkeypatch.setitem(db.settings_dict, "PORT", "9")  # nothing listens there: the database is away
    answer = signed_post(body)
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
    monkeypatch.undo()
    assert signed_post(body).status_code == 202
    assert Notification.objects.filter(resource_id="txn-away").count() == 1


@pytest.mark.skipif(connection.vendor != "postgresql", reason="counts what psycopg sends")
def test_a_webhook_on_a_kept_connection_sends_its_insert_alone_no_health_check_first(signed_post):
    """The INSERT is the request's health check (`intake.notification_insert`): on a connection kept from an
    earlier request, the webhook sends the database one statement, on Django's cursor, which a query log sees."""
    import psycopg
    from django.test.utils import CaptureQueriesContext

    db = connections["default"]
    assert db.settings_dict["CONN_HEALTH_CHECKS"] and db.settings_dict["CONN_MAX_AGE"]
    signed_post(raw(notification("txn-before")))  # a connection kept from a request
    kept, sent, execute = db.connection, [], psycopg.Cursor.execute

    def counted(cursor, query, *args, **kwargs):
        sent.append(query if isinstance(query, str) else repr(query))
        return execute(cursor, query, *args, **kwargs)

    with mock.patch.object(psycopg.Cursor, "execute", counted), CaptureQueriesContext(db) as logged:
        assert signed_post(raw(notification("txn-kept"))).status_code == 202
    assert db.connection is kept
    assert len(sent) == 1 and sent[0].startswith("INSERT INTO"), sent
    assert [query["sql"].split(" (", 1)[0] for query in logged] == [sent[0].split(" (", 1)[0]]  # the same INSERT
    assert Notification.objects.filter(resource_id="txn-kept").count() == 1


def test_djangos_health_check_flag_is_what_the_intake_sets(signed_post):
    """`intake.notification_insert` skips CONN_HEALTH_CHECKS' `SELECT 1` by setting Django's internal
    `health_check_done` (no public API does it). This pins the contract it relies on, on any database: a
    request's start resets the flag, and a connection whose flag is set is not checked before its cursor.
    A Django that renames or rereads it fails here, not in production's latency."""
    from django.core import signals

    db = connections["default"]
    assert db.settings_dict["CONN_HEALTH_CHECKS"]
    signed_post(raw(notification("txn-before")))  # a connection kept from a request
    assert db.connection is not None and db.health_check_enabled
    db.health_check_done = True
    signals.request_started.send(sender=None)  # as a request's start does: Django's close_old_connections
    assert db.connection is not None and db.health_check_done is False
    with mock.patch.object(type(db), "is_usable", return_value=True) as checked:
        db.health_check_done = True
        with db.cursor():
            pass
        assert not checked.called  # the flag set: no check before the cursor
        db.health_check_done = False
        with db.cursor():
            pass
        assert checked.call_count == 1  # the flag clear: the check runs, and marks itself done
        assert db.health_check_done is True


# ---- what else the webhook promises --------------------------------------------------------------------------------


def webhooks_counted() -> dict:
    return {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(metrics_text(scraped=False).decode())
        for sample in family.samples
        if sample.name == "partner_webhooks_received_total"
    }


def test_each_answer_is_counted_by_status(signed_post):
    before = webhooks_counted()
    signed_post(raw(notification()))
    signed_post(b"{}", signature="bm90IGEgc2lnbmF0dXJl")
    signed_post(b"[1]")
    after = webhooks_counted()
    for status in ("202", "401", "400"):
        assert after.get(status, 0) - before.get(status, 0) == 1, status


def test_something_unexpected_is_djangos_logged_500(signed_post, monkeypatch, caplog):
    import partner.inbox.views as views

    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(views, "webhook_receive", broken)
    answer = signed_post(raw(notification()))
    assert answer.status_code == 500
    assert answer.headers["X-Frame-Options"] == "DENY" and answer.headers["X-Request-ID"]
    assert any(record.name == "django.request" and record.exc_info for record in caplog.records)


def test_a_refused_answer_is_logged_as_django_logs_it(signed_post, caplog):
    signed_post(raw(notification()), signature="AAAA")
    assert [r.getMessage() for r in caplog.records if r.name == "django.request"] == ["Unauthorized: /v1/webhooks"]
