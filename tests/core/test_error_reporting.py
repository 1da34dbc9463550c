"""Error reporting: Sentry only with SENTRY_DSN, and nothing secret or personal in what it sends.

The SDK is started with a transport of the test's own that keeps the envelopes it is given
instead of sending them: what it holds is exactly what would have left the process.
"""

import logging

import pytest
import sentry_sdk
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from sentry_sdk.transport import Transport

from partner.core.error_reporting import error_reporting_init
from partner.core.logging import MASK, secret_register, secrets_registered_clear
from tests.helpers.processes import run_django

SECRET = "registered-secret-for-sentry-31337"  # noqa: S105 - an access token learnt at run time
PAT = "partner-access-token-in-the-query-8080"
BORROWER = "Jane Q. Borrower, 12 Main Street"
CREDENTIALS = ["bearer-value-never-sent-1", "pat-header-never-sent-2", "signature-never-sent-3", "cookie-never-sent-4"]
HEADERS = {
    "HTTP_AUTHORIZATION": f"Bearer {CREDENTIALS[0]}",
    "HTTP_X_SVC_PAT": CREDENTIALS[1],
    "HTTP_SVC_SIGNATURE": CREDENTIALS[2],
    "HTTP_COOKIE": f"sessionid={CREDENTIALS[3]}",
}
NEVER_SENT = [SECRET, PAT, BORROWER, *CREDENTIALS]


@csrf_exempt  # a webhook-like POST
def boom(request):
    logging.getLogger("tests.sentry.quiet").info("calling the service with %s", SECRET)  # a breadcrumb
    raise RuntimeError(f"the service refused token {SECRET}")


def fine(request):
    return HttpResponse("ok")


urlpatterns = [path("boom/", boom), path("fine/", fine)]


class Captured(Transport):
    """Keeps each envelope the SDK would send."""

    def __init__(self, options=None):
        super().__init__(options)
        self.envelopes = []

    def capture_envelope(self, envelope):
        self.envelopes.append(envelope)

    def events(self):
        return [item.payload.json for envelope in self.envelopes for item in envelope.items if item.type == "event"]

    def sent(self) -> str:
        return b"".join(envelope.serialize() for envelope in self.envelopes).decode()


@pytest.fixture
def sentry():
    quiet = logging.getLogger("tests.sentry.quiet")  # no handler of ours: nothing masks its lines before Sentry
    quiet.propagate, quiet.level = False, logging.INFO
    transport = Captured()
    secret_register(SECRET)
    assert error_reporting_init(
        dsn="https://public@sentry.invalid/1", secret_headers=["X-Svc-PAT", "Svc-Signature"], transport=transport
    )
    yield transport
    sentry_sdk.get_client().close()
    sentry_sdk.get_global_scope().set_client(None)
    quiet.propagate, quiet.level = True, logging.NOTSET
    secrets_registered_clear()


def test_without_a_dsn_nothing_is_started():
    assert error_reporting_init(dsn="") is False


def _wsgi_call(request) -> str:
    """Answer `request` as gunicorn has Django do it (WSGIHandler, where the SDK takes the URL and headers)."""
    from django.core.handlers.wsgi import WSGIHandler

    statuses = []
    b"".join(WSGIHandler()(request.environ, lambda status, headers, exc_info=None: statuses.append(status)))
    return statuses[0]


@pytest.mark.django_db(transaction=True)  # a request's end closes the connection, as in production
@override_settings(ROOT_URLCONF=__name__)
def test_an_error_in_a_view_is_sent_without_secrets_credentials_or_body(sentry):
    status = _wsgi_call(
        RequestFactory().post(f"/boom/?partnerAccessToken={PAT}&page=2", data={"borrower": BORROWER}, **HEADERS)
    )
    assert status.startswith("500")
    sentry_sdk.flush()
    [event] = sentry.events()
    assert event["exception"]["values"][-1]["type"] == "RuntimeError"
    assert event["exception"]["values"][-1]["value"] == f"the service refused token {MASK}"
    request = event["request"]
    assert request["url"].endswith("/boom/")
    assert request["query_string"] == f"partnerAccessToken={MASK}&page=2"
    headers = {name.lower(): value for name, value in request["headers"].items()}
    for name in ("authorization", "x-svc-pat", "svc-signature", "cookie"):
        assert headers[name] == MASK, name
    assert "data" not in request and "cookies" not in request
    breadcrumbs = [crumb["message"] for crumb in event["breadcrumbs"]["values"] if crumb.get("category")]
    assert f"calling the service with {MASK}" in breadcrumbs
    assert all("vars" not in frame for frame in event["exception"]["values"][-1]["stacktrace"]["frames"])
    sent = sentry.sent()
    for value in NEVER_SENT:
        assert value not in sent, value


@pytest.mark.django_db(transaction=True)
@override_settings(ROOT_URLCONF=__name__)
def test_a_request_that_succeeds_sends_nothing(sentry):
    assert _wsgi_call(RequestFactory().get(f"/fine/?partnerAccessToken={PAT}")).startswith("200")
    sentry_sdk.flush()
    assert sentry.events() == []


@pytest.mark.django_db(transaction=True)  # the worker's signals tidy the connections around a task
def test_an_error_in_a_task_is_sent_without_the_secret(sentry):
    from config.celery import app

    @app.task(name="tests.error_reporting.boom")
    def failing_task(reference):
        raise ValueError(f"could not use {SECRET} for {reference}")

    result = failing_task.apply(args=[f"https://svc.invalid/x?partnerAccessToken={PAT}"])
    assert result.failed()
    sentry_sdk.flush()
    [event] = sentry.events()
    assert event["exception"]["values"][-1]["type"] == "ValueError"
    assert (
        event["exception"]["values"][-1]["value"]
        == f"could not use {MASK} for https://svc.invalid/x?partnerAccessToken={MASK}"
    )
    assert event["extra"]["celery-job"]["task_name"] == "tests.error_reporting.boom"
    sent = sentry.sent()
    assert SECRET not in sent and PAT not in sent


def test_a_line_logged_at_error_is_sent_masked(sentry):
    logging.getLogger("tests.sentry.quiet").error("token refused: %s", SECRET)
    sentry_sdk.flush()
    [event] = sentry.events()
    assert event["level"] == "error"
    assert SECRET not in sentry.sent()
    assert MASK in event["logentry"]["message"] + str(event["logentry"].get("params"))


# The settings: SENTRY_DSN starts it, with the scrubbing; nothing starts without it.

LOCAL = {"DJANGO_DEBUG": "true", "CELERY_BROKER_URL": "memory://", "LOG_FORMAT": ""}
CLIENT = (
    "import django; django.setup(); import sentry_sdk; client = sentry_sdk.get_client(); "
    "print(client.is_active(), client.options['send_default_pii'], client.options['include_local_variables'], "
    "client.options['max_request_body_size'], client.options['before_send'] is not None, "
    "sorted(name for name in client.integrations if name in ('django', 'celery')), client.options['environment'])"
)


def test_settings_start_sentry_with_a_dsn_and_the_scrubbing(tmp_path):
    result = run_django(
        {
            **LOCAL,
            "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
            "SENTRY_DSN": "https://public@sentry.invalid/1",
            "SENTRY_ENVIRONMENT": "staging",
        },
        CLIENT,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "True False False never True ['celery', 'django'] staging"


def test_settings_start_no_sentry_without_a_dsn(tmp_path):
    result = run_django({**LOCAL, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "SENTRY_DSN": ""}, CLIENT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("False ")


def test_a_malformed_dsn_stops_startup_naming_the_variable_without_echoing_it(tmp_path):
    result = run_django(
        {**LOCAL, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3", "SENTRY_DSN": "not-a-dsn-secretish"}
    )
    assert result.returncode != 0
    assert "SENTRY_DSN is malformed" in result.stderr
    assert "not-a-dsn-secretish" not in result.stderr


def test_a_traces_sample_rate_outside_zero_to_one_stops_startup(tmp_path):
    result = run_django(
        {
            **LOCAL,
            "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
            "SENTRY_DSN": "https://public@sentry.invalid/1",
            "SENTRY_TRACES_SAMPLE_RATE": "5",
        }
    )
    assert result.returncode != 0
    assert "SENTRY_TRACES_SAMPLE_RATE must be between 0 and 1" in result.stderr
