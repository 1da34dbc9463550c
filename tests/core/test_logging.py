"""The log filter: secrets never reach a log line; every line carries the request id."""

import logging

import pytest
from django.http import HttpResponse
from django.test import Client, RequestFactory, override_settings

from partner.core.logging import MASK, RedactSecretsFilter, RequestIdFilter, redact, secret_register
from partner.core.middleware import RequestIdMiddleware


@pytest.fixture
def captured():
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(self.format(record))

    handler = Keep()
    handler.setFormatter(logging.Formatter("[%(request_id)s] %(message)s"))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactSecretsFilter())
    logger = logging.getLogger("tests.redaction")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield logger, records
    logger.removeHandler(handler)


@override_settings(SVC_CLIENT_SECRET="client-secret-value", SVC_SIGNING_SECRETS=["sign-old-secret", "sign-new-secret"])
def test_configured_secrets_are_masked(captured):
    logger, records = captured
    logger.info("calling with %s and %s", "client-secret-value", {"s": "sign-old-secret sign-new-secret"})
    assert "client-secret-value" not in records[0]
    assert "sign-old-secret" not in records[0] and "sign-new-secret" not in records[0]
    assert MASK in records[0]


@pytest.mark.parametrize(
    "line, secret",
    [
        ("password=hunter22 user=bob", "hunter22"),
        ('{"client_secret": "abc123xyz"}', "abc123xyz"),
        ("Authorization: Bearer eyJhbGciOi.payload.sig", "eyJhbGciOi.payload.sig"),
        ("access_token=tok_987654321&x=1", "tok_987654321"),
        ("Svc-Signature: q83vEjRWeJA=", "q83vEjRWeJA="),
        ("X-Svc-PAT=pat-0123456789", "pat-0123456789"),
        ("'token': 'zzz-top-secret'", "zzz-top-secret"),
    ],
)
def test_secret_looking_pairs_are_masked(line, secret):
    assert secret not in redact(line)


def test_ordinary_text_is_kept():
    line = "order 42 moved to REQUEST_COMPLETED after 3 attempts"
    assert redact(line) == line


def test_registered_runtime_secret_is_masked(captured):
    logger, records = captured
    secret_register("runtime-access-token-42")
    logger.info("got runtime-access-token-42 from the service")
    assert "runtime-access-token-42" not in records[0]


def test_secret_in_traceback_is_masked(captured):
    logger, records = captured
    secret_register("exploding-secret-value")
    try:
        raise ValueError("bad value exploding-secret-value")
    except ValueError:
        logger.exception("failed")
    assert "ValueError" in records[0]
    assert "exploding-secret-value" not in records[0]


def test_lines_logged_during_a_request_carry_its_id(captured):
    logger, records = captured

    def view(request):
        logger.info("inside the view")
        return HttpResponse("ok")

    response = RequestIdMiddleware(view)(RequestFactory().get("/", HTTP_X_REQUEST_ID="req-abc-123"))
    assert response["X-Request-ID"] == "req-abc-123"
    assert records == ["[req-abc-123] inside the view"]
    logger.info("outside")
    assert records[-1] == "[-] outside"


def test_unsafe_request_id_is_replaced(db):
    response = Client().get("/healthz", HTTP_X_REQUEST_ID="bad id\nwith newline")
    assert response["X-Request-ID"] != "bad id\nwith newline"
    assert len(response["X-Request-ID"]) == 32


def test_runserver_request_lines_go_through_the_redaction_filter():
    """Django's own `django.server` handler has no filter: ours must carry those lines."""
    token = "pat-query-token-value-1234"  # noqa: S105
    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        (f"GET /?partnerAccessToken={token} HTTP/1.1", 200, 5),
        None,
    )
    handlers = logging.getLogger("django.server").handlers
    assert handlers
    for handler in handlers:
        assert handler.filter(record)
        assert token not in handler.format(record)


def test_an_event_with_a_traceback_or_line_breaks_is_one_line():
    """The project's formatter: one line per event, so no text can forge a second one."""
    from django.conf import settings

    from partner.core.logging import OneLineFormatter

    spec = settings.LOGGING["formatters"]["line"]
    assert spec["()"] == "partner.core.logging.OneLineFormatter"
    formatter = OneLineFormatter("%(levelname)s %(message)s")
    try:
        raise ValueError("first\nsecond")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed\nINFO forged line", None, sys.exc_info())
    line = formatter.format(record)
    assert "\n" not in line and "\r" not in line
    assert line.startswith("ERROR failed\\nINFO forged line")
    assert "Traceback (most recent call last):\\n" in line and "ValueError: first\\nsecond" in line


def test_every_control_character_is_escaped_in_a_line():
    """C0, DEL and C1 controls (and the Unicode line separators) never reach the log raw: an escape sequence
    could repaint a terminal, a NUL or a NEL cut the line for a collector."""
    from partner.core.logging import OneLineFormatter

    controls = [chr(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]] + ["\u2028", "\u2029"]
    formatter = OneLineFormatter("%(levelname)s %(message)s")
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "id=%s", ("a" + "".join(controls) + "z",), None)
    line = formatter.format(record)
    assert not any(character in line for character in controls)
    assert line.startswith("WARNING id=a\\x00\\x01")
    assert "\\t\\n\\x0b\\x0c\\r" in line
    assert line.endswith(
        "\\x1f\\x7f\\x80" + "".join(f"\\x{code:02x}" for code in range(0x81, 0xA0)) + "\\u2028\\u2029z"
    )


def test_printable_text_is_kept_as_is_in_a_line():
    from partner.core.logging import OneLineFormatter

    text = "txn-José 42 €5 — done \\n stays"
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%s", (text,), None)
    assert OneLineFormatter("%(message)s").format(record) == text
