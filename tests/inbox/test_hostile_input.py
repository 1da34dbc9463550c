"""POST /v1/webhooks with bodies built to reach code paths they should not.

A chunked body (no Content-Length) is read up to the size limit where the server can hand it
over (gunicorn) and answered 411 where it cannot (Django's runserver); a deeply nested body and
a control character in a field we keep are answered 400 with nothing stored.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from partner.inbox.models import Notification
from partner.platform.signatures import signature_compute
from tests.helpers.webhooks import notification, raw

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
GUNICORN_LIMIT = 4096  # WEBHOOK_MAX_BYTES of the application under gunicorn


def _chunks(body: bytes, size: int = 100):
    """A generator body: `requests` sends it with Transfer-Encoding: chunked and no Content-Length."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _post_chunked(url: str, body: bytes, secret: str, header: str) -> requests.Response:
    return requests.post(
        f"{url}/v1/webhooks",
        data=_chunks(body),
        headers={header: signature_compute(body, secret), "Content-Type": "application/json"},
        timeout=30,
    )


# ---- (a) chunked bodies -------------------------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _database_url() -> str:
    """The test database (the one this test writes and reads), as the DATABASE_URL of another process."""
    from django.db import connection

    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    user = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    return f"postgres://{user}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def gunicorn_app(settings, tmp_path):
    """The application under gunicorn (which hands a chunked body to the application), on the test database."""
    if not GUNICORN.exists():
        pytest.skip("needs gunicorn")
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "TEST_RUN_ID": str(settings.RUN_ID),
        "DATABASE_URL": _database_url(),
        "DATABASE_CONN_MAX_AGE": "0",
        "WEBHOOK_MAX_BYTES": str(GUNICORN_LIMIT),
    }
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [str(GUNICORN), "--config", str(ROOT / "gunicorn.conf.py"), "--bind", f"127.0.0.1:{port}"]
            + ["--workers", "1", "config.wsgi"],
            cwd=str(ROOT),
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                requests.get(f"{url}/healthz", timeout=2)
                break
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or still booting
                if server.poll() is not None:
                    pytest.fail(f"gunicorn did not start: {log.read_text()[-2000:]}")
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(15)


def test_chunked_signed_webhook_is_read_and_accepted_under_gunicorn(gunicorn_app, settings):
    """Was read as empty, so a correctly signed notification got 401 and the service sent it again for ever."""
    body = raw(notification("txn-chunked"))
    response = _post_chunked(gunicorn_app, body, settings.SVC_SIGNING_SECRETS[0], settings.SVC_SIGNATURE_HEADER)
    assert response.status_code == 202, response.text
    stored = Notification.objects.get()
    assert stored.resource_id == "txn-chunked"
    assert stored.body.encode() == body


def test_chunked_body_over_the_limit_is_413_under_gunicorn(gunicorn_app, settings):
    body = raw(notification("txn-big", padding="x" * GUNICORN_LIMIT))
    response = _post_chunked(gunicorn_app, body, settings.SVC_SIGNING_SECRETS[0], settings.SVC_SIGNATURE_HEADER)
    assert response.status_code == 413
    assert not Notification.objects.exists()


def test_chunked_webhook_to_a_server_that_cannot_hand_it_over_is_411(live_server, settings):
    """Django's own server gives the application no chunked body: 411 (send a Content-Length), never 401."""
    body = raw(notification("txn-chunked"))
    response = _post_chunked(live_server.url, body, settings.SVC_SIGNING_SECRETS[0], settings.SVC_SIGNATURE_HEADER)
    assert response.status_code == 411
    assert not Notification.objects.exists()


def test_chunked_read_is_bounded_by_the_limit(settings):
    """Without a Content-Length the stream is read no further than the limit and one byte."""
    import io

    from django.test import RequestFactory

    from partner.inbox.views import WebhookBodyRefused, _read_body

    settings.WEBHOOK_MAX_BYTES = 100

    class Counting(io.BytesIO):
        def read(self, size=-1):
            assert size is not None and 0 <= size <= 101, size
            return super().read(size)

    request = RequestFactory().post("/v1/webhooks", data=b"", content_type="application/json")
    request.META.pop("CONTENT_LENGTH", None)
    request.environ.update({"wsgi.input": Counting(b"y" * 10_000), "wsgi.input_terminated": True})
    request.META["HTTP_TRANSFER_ENCODING"] = "chunked"
    with pytest.raises(WebhookBodyRefused) as refused:
        _read_body(request)
    assert refused.value.status_code == 413

    request.environ["wsgi.input"] = Counting(b"z" * 100)
    assert _read_body(request) == b"z" * 100


# ---- (b) deep nesting ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"meta": ' + b'{"a": ' * 30_000 + b"1" + b"}" * 30_000 + b"}",
        raw(notification())[:-1] + b', "extra": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    ],
    ids=["arrays", "objects-in-meta", "beside-the-fields"],
)
def test_signed_deeply_nested_body_is_400_and_stores_nothing(signed_post, body):
    """Was a RecursionError, answered 500."""
    response = signed_post(body)
    assert response.status_code == 400
    assert "nested" in response.json()["message"]
    assert not Notification.objects.exists()


# ---- (c) control characters ---------------------------------------------------------------------------------------

CONTROLS = ["\x00", "\x01", "\x1b", "\x7f", "\x85", "\n", "\t"]


def _with(field: str, value: str) -> dict:
    body = notification()
    if field.startswith("meta."):
        body["meta"][field.removeprefix("meta.")] = value
    else:
        body[field] = value
    return body


@pytest.mark.parametrize("character", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
@pytest.mark.parametrize(
    "field",
    [
        "eventId",
        "eventType",
        "eventTime",
        "meta.resourceType",
        "meta.resourceId",
        "meta.instanceId",
        "meta.resourceRef",
    ],
)
def test_control_character_in_a_kept_field_is_400_and_stores_nothing(signed_post, field, character):
    """Was stored as is (and written raw to the log); on PostgreSQL a NUL was refused by the driver: 503 for ever."""
    value = {"eventTime": "2026-11-22T10:00:00Z"}.get(field, "txn-1")
    body = json.dumps(_with(field, value[:4] + character + value[4:])).encode()
    response = signed_post(body)
    assert response.status_code == 400
    assert field in response.json()["message"]
    assert not Notification.objects.exists()


@pytest.mark.parametrize("where", ["value", "key"])
def test_nul_anywhere_in_the_body_is_400(signed_post, where):
    """The body is kept and read again later: no NUL (which PostgreSQL refuses in text and jsonb) anywhere in it."""
    extra = {"note": "before\x00after"} if where == "value" else {"details": {"k\x00": 1}}
    response = signed_post(json.dumps(notification(**extra)).encode())
    assert response.status_code == 400
    assert "control character" in response.json()["message"]
    assert not Notification.objects.exists()


def test_the_text_of_a_nul_escape_is_not_a_nul(signed_post):
    """A NUL can only come as the escape `\\u0000`; the text of that escape, its backslash escaped, is six
    ordinary characters and is accepted (the body is walked only when the escape's text is in it)."""
    body = json.dumps(notification(note="a \\u0000 b")).encode()
    assert b"\\\\u0000" in body
    response = signed_post(body)
    assert response.status_code == 202
    assert json.loads(Notification.objects.get().body)["note"] == "a \\u0000 b"


def test_line_breaks_in_a_field_we_do_not_keep_are_accepted(signed_post):
    """Only the kept fields are held to no control character at all; free text elsewhere may break lines."""
    response = signed_post(json.dumps(notification(note="line one\nline two\ttabbed\r\n")).encode())
    assert response.status_code == 202
    assert Notification.objects.get().resource_id == "txn-1"


def test_control_characters_in_a_header_are_stored_escaped(signed_post):
    """A header is kept for a person reading the inbox: its control characters are escaped, never refused by the
    database (gunicorn refuses them; Django's runserver passes them on)."""
    response = signed_post(raw(notification()), HTTP_X_ODD="a\x00b\x1bc")
    assert response.status_code == 202
    assert Notification.objects.get().headers["X-Odd"] == "a\\x00b\\x1bc"
