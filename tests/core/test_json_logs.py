"""LOG_FORMAT=json: one JSON object per line, with the request id and the ids at hand, masked and escaped."""

import io
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.http import HttpResponse
from django.test import RequestFactory

from partner.core.logging import (
    MASK,
    JsonLineFormatter,
    OneLineFormatter,
    RedactSecretsFilter,
    RequestIdFilter,
    log_context,
    secret_register,
    secrets_registered_clear,
)
from partner.core.middleware import RequestIdMiddleware
from tests.helpers.ports import free_port
from tests.helpers.processes import run_django
from tests.helpers.waiting import answered, wait_for

ROOT = Path(__file__).resolve().parents[2]
# Every control character: C0, DEL, C1 and the Unicode line and paragraph separators.
CONTROLS = [chr(code) for code in [*range(0x20), 0x7F, *range(0x80, 0xA0)]] + ["\u2028", "\u2029"]


def _handler(formatter):
    """A handler as the settings build the console one: the request id filter, then the secret filter."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactSecretsFilter())
    return handler, stream


@pytest.fixture
def json_lines():
    """A logger writing through the JSON formatter; `read()` parses each line written so far."""
    handler, stream = _handler(JsonLineFormatter())
    logger = logging.getLogger("tests.json_logs")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def read():
        text = stream.getvalue()
        assert text.endswith("\n")
        return text, [json.loads(line) for line in text.splitlines()]

    yield logger, read
    logger.removeHandler(handler)
    logger.propagate = True
    secrets_registered_clear()


def _partner_lines(read):
    """The JSON objects of the lines the partner's own modules wrote."""
    return [line for line in read()[1] if line["logger"].startswith("partner.")]


@pytest.fixture
def partner_json_lines():
    """The `partner` loggers (the dispatch, the pipeline, the services) written through the JSON formatter."""
    handler, stream = _handler(JsonLineFormatter())
    logger = logging.getLogger("partner")
    logger.addHandler(handler)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)


def test_a_line_is_one_object_with_time_level_logger_message_and_request_id(json_lines):
    logger, read = json_lines
    logger.warning("order %s moved", 42)
    text, [line] = read()
    assert text.count("\n") == 1
    assert list(line)[:5] == ["time", "level", "logger", "message", "request_id"]
    assert line["level"] == "WARNING"
    assert line["logger"] == "tests.json_logs"
    assert line["message"] == "order 42 moved"
    assert line["request_id"] == "-"
    assert line["time"].endswith("Z") and line["time"][10] == "T"  # ISO 8601, UTC


def test_a_line_logged_during_a_request_carries_its_id(json_lines):
    logger, read = json_lines

    def view(request):
        logger.info("inside the view")
        return HttpResponse("ok")

    RequestIdMiddleware(view)(RequestFactory().get("/", HTTP_X_REQUEST_ID="req-json-123"))
    logger.info("after it")
    _, lines = read()
    assert [(line["message"], line["request_id"]) for line in lines] == [
        ("inside the view", "req-json-123"),
        ("after it", "-"),
    ]


def test_the_ids_of_log_context_are_fields_inside_the_block_only(json_lines):
    logger, read = json_lines
    with log_context(notification_id=5, transaction_id="txn-7"):
        logger.info("outer")
        with log_context(order_id=9, transaction_id=None):  # None adds nothing, and hides nothing
            logger.info("inner")
        logger.info("outer again")
    logger.info("outside")
    _, lines = read()
    ids = [{key: line.get(key) for key in ("notification_id", "order_id", "transaction_id")} for line in lines]
    assert ids == [
        {"notification_id": 5, "order_id": None, "transaction_id": "txn-7"},
        {"notification_id": 5, "order_id": 9, "transaction_id": "txn-7"},
        {"notification_id": 5, "order_id": None, "transaction_id": "txn-7"},
        {"notification_id": None, "order_id": None, "transaction_id": None},
    ]
    assert "order_id" not in lines[-1] and "notification_id" not in lines[-1]


def test_log_context_refuses_a_name_of_the_line_itself():
    with pytest.raises(TypeError, match="message"), log_context(message="x"):
        pass


def test_a_registered_secret_never_appears_in_message_extra_or_traceback(json_lines):
    logger, read = json_lines
    secret = "registered-json-secret-4242"  # noqa: S105
    secret_register(secret)
    logger.info("got %s", secret, extra={"detail": f"it was {secret}", "nested": {"value": [secret]}})
    try:
        raise ValueError(f"refused with {secret}")
    except ValueError:
        logger.exception("call failed with %s", secret)
    text, (first, second) = read()
    assert secret not in text
    assert first["message"] == f"got {MASK}"
    assert first["detail"] == f"it was {MASK}"
    assert first["nested"] == {"value": [MASK]}
    assert second["message"] == f"call failed with {MASK}"
    assert "ValueError: refused with " + MASK in second["exc_info"]


def test_the_traceback_is_a_field_that_keeps_its_line_breaks_on_one_line(json_lines):
    logger, read = json_lines
    try:
        raise KeyError("missing")
    except KeyError:
        logger.exception("failed")
    text, [line] = read()
    assert text.count("\n") == 1  # the object stays on one line
    assert line["message"] == "failed"
    assert line["exc_info"].startswith("Traceback (most recent call last):\n")
    assert line["exc_info"].rstrip().endswith("KeyError: 'missing'")


def test_no_control_character_is_written_raw(json_lines):
    logger, read = json_lines
    hostile = "a" + "".join(CONTROLS) + "z"
    logger.warning("id=%s", hostile, extra={"header": hostile})
    text, [line] = read()
    assert not any(character in text.rstrip("\n") for character in CONTROLS)
    # The same visible escapes as the text lines: a forged line or a terminal sequence reads as text.
    assert line["message"].startswith("id=a\\x00\\x01")
    assert "\\n" in line["message"] and "\\x1b" in line["message"] and "\\u2028" in line["message"]
    assert line["header"] == OneLineFormatter("%(message)s").format(logging.makeLogRecord({"msg": hostile}))


def test_text_lines_show_the_ids_after_the_request_id():
    from django.conf import settings

    spec = settings.LOGGING["formatters"]["line"]
    handler, stream = _handler(OneLineFormatter(spec["format"]))
    logger = logging.getLogger("tests.text_ids")
    logger.addHandler(handler)
    try:
        with log_context(order_id=7, transaction_id="txn-1"):
            logger.warning("inside")
        logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = stream.getvalue().splitlines()
    assert inside.endswith("WARNING tests.text_ids [- order_id=7 transaction_id=txn-1] inside")
    assert outside.endswith("WARNING tests.text_ids [-] outside")


@pytest.mark.django_db
def test_a_notification_s_lines_carry_its_id_and_its_transaction_s(partner_json_lines, monkeypatch):
    from partner.inbox import dispatch
    from partner.inbox.models import Notification
    from partner.platform.urns import transaction_resource_type

    def handler(**kwargs):
        logging.getLogger("partner.tests.handler").info("handling")

    monkeypatch.setattr(dispatch, "handler_for", lambda resource_type, event_type: handler)
    notification = Notification.objects.create(
        dedupe_key="json-logs-1",
        resource_type=transaction_resource_type(),
        resource_id="txn-json-logs-1",
        event_type="created",
        body="{}",
    )
    dispatch.notification_process(notification_id=notification.pk)
    [line] = [line for line in partner_json_lines() if line["message"] == "handling"]
    assert line["notification_id"] == notification.pk
    assert line["transaction_id"] == "txn-json-logs-1"


@pytest.mark.django_db
def test_an_order_s_lines_carry_its_order_and_transaction_ids_also_when_it_fails(partner_json_lines, monkeypatch):
    from partner.fulfillment import runs
    from partner.fulfillment.models import FailureCode, Order
    from partner.fulfillment.orders.services import OrderFailed

    def order_prepare(order, lease):
        logging.getLogger("partner.tests.steps").info("working")
        raise OrderFailed(FailureCode.ORDER_REFUSED, "refused by the test")

    monkeypatch.setattr(runs, "order_prepare", order_prepare)
    order = Order.objects.create(transaction_id="txn-json-logs-2")
    runs.order_run(order_id=order.pk)
    lines = partner_json_lines()
    working = next(line for line in lines if line["message"] == "working")
    failed = next(line for line in lines if line["logger"] == "partner.fulfillment.orders.services")
    for line in (working, failed):
        assert line["order_id"] == order.pk
        assert line["transaction_id"] == "txn-json-logs-2"
    logging.getLogger("partner.tests.steps").info("after")
    assert "order_id" not in partner_json_lines()[-1]


# The settings: LOG_FORMAT chooses the console handler's formatter.

LOCAL = {"DJANGO_DEBUG": "true", "CELERY_BROKER_URL": "memory://", "SENTRY_DSN": "", "LOG_FORMAT": ""}
LOG_A_LINE = """import django, logging
django.setup()
from partner.core.logging import log_context, secret_register
from tests.helpers.orders import order_ran
secret_register("subprocess-secret-777")
with log_context(transaction_id="txn-sub"):
    logging.getLogger("partner.sub").warning("value subprocess-secret-777" + chr(27))
"""


def test_log_format_json_writes_the_console_lines_as_json(tmp_path):
    result = run_django({**LOCAL, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "LOG_FORMAT": "json"}, LOG_A_LINE)
    assert result.returncode == 0, result.stderr
    [line] = [json.loads(text) for text in result.stderr.splitlines() if '"partner.sub"' in text]
    assert line["level"] == "WARNING"
    assert line["transaction_id"] == "txn-sub"
    assert line["message"] == f"value {MASK}\\x1b"


def test_the_text_format_stays_the_default(tmp_path):
    result = run_django({**LOCAL, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"}, LOG_A_LINE)
    assert result.returncode == 0, result.stderr
    assert f"WARNING partner.sub [- transaction_id=txn-sub] value {MASK}\\x1b" in result.stderr


def test_an_unknown_log_format_stops_startup_naming_the_variable(tmp_path):
    result = run_django({**LOCAL, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "LOG_FORMAT": "bogus"})
    assert result.returncode != 0
    assert "- LOG_FORMAT must be text" in result.stderr


# gunicorn's own lines, with the project's gunicorn.conf.py.


@pytest.mark.skipif(shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None, reason="needs gunicorn")
def test_gunicorn_error_and_access_lines_are_json_with_log_format_json(tmp_path):
    token = "query-token-never-logged-json-5555"  # noqa: S105
    access, errors = tmp_path / "access.log", tmp_path / "error.log"
    app = tmp_path / "hello.py"
    app.write_text(
        "def application(environ, start):\n    start('200 OK', [('X-Request-ID', 'req-gunicorn-1')])\n"
        "    return [b'ok']\n"
    )
    port = free_port()
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            *("--config", str(ROOT / "gunicorn.conf.py"), "--chdir", str(tmp_path)),
            *("--bind", f"127.0.0.1:{port}", "--workers", "1"),
            *("--access-logfile", str(access), "--error-logfile", str(errors)),
            "hello:application",
        ],
        env={**os.environ, "LOG_FORMAT": "json", "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/v1/origins/o-1?partnerAccessToken={token}"
        response = answered(lambda: requests.get(url, timeout=2), message="gunicorn to answer")
        assert response.status_code == 200
        wait_for(lambda: access.exists() and access.read_text(), timeout=30, message="the access log's line")
    finally:
        server.terminate()
        server.wait(10)
    [line] = [json.loads(text) for text in access.read_text().splitlines()]
    assert line["logger"] == "gunicorn.access"
    assert line["request_id"] == "req-gunicorn-1"
    assert '"GET /v1/origins/o-1 HTTP/1.1" 200' in line["message"]
    assert token not in access.read_text() and "partnerAccessToken" not in access.read_text()
    started = [json.loads(text) for text in errors.read_text().splitlines()]
    assert any(line["logger"] == "gunicorn.error" and "Listening at" in line["message"] for line in started)
