"""`POST /v1/webhooks` on a lean path: the webhook's answer without the middleware stack, the URL
resolver and DRF, and nothing of what they do for it left out.

`config/wsgi.py` hands exactly `POST /v1/webhooks` to `WebhookApplication` and every other request
to Django's handler. Per webhook the profile (bench/README.md) found Django's middleware, URL
resolving and DRF's request, negotiation and rendering costing more than verifying and storing
it; `WebhookApplication` keeps Django's request object (`WSGIRequest`) and runs the middleware's
own code where a webhook needs it:

- TrustedProxyMiddleware and RequestIdMiddleware themselves (REMOTE_ADDR from trusted proxies
  only, X-Forwarded-Proto dropped from anyone else; X-Request-ID, and the id on every log line);
- SecurityMiddleware's and CommonMiddleware's `process_request`: a request they would answer
  themselves (HTTPS redirect, a Host not in ALLOWED_HOSTS, a refused user agent, PREPEND_WWW) is
  handed to Django's handler as it came, so that it is answered exactly as before;
- the headers SecurityMiddleware and XFrameOptionsMiddleware add (HSTS on HTTPS, nosniff,
  Referrer-Policy, COOP, X-Frame-Options), computed by their `process_response` once per scheme
  (again after a setting changes), and Content-Length as CommonMiddleware sets it;
- the database connection's part of request_started / request_finished (`close_old_connections`,
  before and after: CONN_MAX_AGE, closed after an error; the INSERT itself is the health check,
  see `notification_insert`); their other receivers (reset_queries, close_caches, reset_urlconf)
  have nothing to undo here: no query log without DEBUG, no cache, no urlconf set;
- the django.request line of a 4xx/5xx; Django's 500 (logged, got_request_exception) for anything
  unexpected; the answer counted by status.

The answers are the API view's, header for header (with DRF's `Allow` and `Vary: Accept`).
Sessions, CSRF (the view is exempt), authentication, messages and static files have nothing to do
for a signed server-to-server POST (SKIPPED_MIDDLEWARE). A middleware this module does not know
turns the lean path off (every webhook then goes through Django's handler) and says so at start.
"""

import logging
from http.client import responses

from django.conf import settings
from django.core import signals
from django.core.exceptions import PermissionDenied, SuspiciousOperation
from django.core.handlers.exception import response_for_exception
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.db import close_old_connections
from django.http import HttpResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import set_script_prefix
from django.utils.log import log_response

from partner.core.middleware import RequestIdMiddleware, TrustedProxyMiddleware
from partner.inbox.metrics import WEBHOOKS
from partner.inbox.views import webhook_answer

logger = logging.getLogger(__name__)

# The URL map's path of the webhook (partner/inbox/urls.py under "v1/"; a test holds the two together).
WEBHOOK_PATH = "/v1/webhooks"

# The middleware whose work for a webhook this module does, as described above.
HANDLED_MIDDLEWARE = (
    "partner.core.middleware.TrustedProxyMiddleware",
    "partner.core.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
)
# The middleware the webhook goes without, and why each has nothing to do for it.
SKIPPED_MIDDLEWARE = {
    "whitenoise.middleware.WhiteNoiseMiddleware": "serves the files under STATIC_URL only",
    "django.contrib.sessions.middleware.SessionMiddleware": "no session: the webhook reads and sets no cookie",
    "django.middleware.csrf.CsrfViewMiddleware": "the view is exempt: a server-to-server POST signed by HMAC",
    "django.contrib.auth.middleware.AuthenticationMiddleware": "no user: the signature is the authentication",
    "django.contrib.messages.middleware.MessageMiddleware": "no messages without a session or a page",
}
# The headers DRF adds to every answer of the API view.
API_VIEW_HEADERS = (("Allow", "POST, OPTIONS"), ("Vary", "Accept"))


class _Reply:
    """An answer on its way out: all RequestIdMiddleware and log_response ask of a response."""

    __slots__ = ("status_code", "headers", "content", "_has_been_logged")

    def __init__(self, status_code: int, headers: list, content: bytes):
        self.status_code = status_code
        self.headers = headers
        self.content = content

    def __setitem__(self, name: str, value: str):
        self.headers.append((name, value))


def _unneeded(request):
    raise AssertionError("the lean path calls the middleware's hooks, never the next layer")


class WebhookApplication:
    """The WSGI application of `POST /v1/webhooks`; `django` answers whatever it hands over."""

    def __init__(self, django):
        self.django = django
        self._counters: dict[int, object] = {}
        self._load()
        # Middleware read their settings when made, as in Django's handler; tests change settings.
        signals.setting_changed.connect(self._settings_changed, weak=False)

    def _load(self):
        unknown = [name for name in settings.MIDDLEWARE if name not in (*HANDLED_MIDDLEWARE, *SKIPPED_MIDDLEWARE)]
        self.enabled = not unknown
        if unknown:
            logger.warning("webhooks go through the whole middleware: %s unknown to the lean path", ", ".join(unknown))
        self.trusted_proxies = TrustedProxyMiddleware(lambda request: request)
        self.with_request_id = RequestIdMiddleware(self._respond)
        self.security = SecurityMiddleware(_unneeded)
        self.common = CommonMiddleware(_unneeded)
        self.frame_options = XFrameOptionsMiddleware(_unneeded)
        self._added_headers: dict[bool, list] = {}  # by request.is_secure()

    def __call__(self, environ, start_response):
        if not self.enabled:
            return self.django(environ, start_response)
        as_received = environ.copy()
        request = self.trusted_proxies(WSGIRequest(environ))
        if not self._ordinary(request):
            return self.django(as_received, start_response)
        set_script_prefix(get_script_name(environ))
        close_old_connections()
        try:
            reply = self.with_request_id(request)
        finally:
            close_old_connections()
        start_response(f"{reply.status_code} {responses.get(reply.status_code, 'Unknown Status Code')}", reply.headers)
        return [reply.content]

    def _ordinary(self, request) -> bool:
        """Whether the middleware lets the request through to the view (else it answers itself)."""
        try:
            return self.security.process_request(request) is None and self.common.process_request(request) is None
        except (PermissionDenied, SuspiciousOperation):
            return False

    def _respond(self, request) -> _Reply:
        try:
            answer = webhook_answer(request)
        except Exception as exc:  # noqa: BLE001 - answered as Django answers it: a logged 500
            return self._reply_of(request, response_for_exception(request, exc))
        self._counter(answer.status).inc()
        content = answer.content
        headers = [("Content-Type", answer.content_type)] if answer.content_type else []
        headers += [*answer.headers, *API_VIEW_HEADERS, ("Content-Length", str(len(content)))]
        headers += self._middleware_headers(request)
        reply = _Reply(answer.status, headers, content)
        if answer.status >= 400:
            log_response("%s: %s", responses[answer.status], request.path, response=reply, request=request)
        return reply

    def _reply_of(self, request, response: HttpResponse) -> _Reply:
        """A Django response (an unexpected error's) through the kept middleware's process_response."""
        for middleware in (self.frame_options, self.common, self.security):
            response = middleware.process_response(request, response)
        return _Reply(response.status_code, list(response.items()), response.content)

    def _middleware_headers(self, request) -> list:
        """The headers SecurityMiddleware and XFrameOptionsMiddleware add to an answer, by their own code."""
        secure = request.is_secure()
        added = self._added_headers.get(secure)
        if added is None:
            response = HttpResponse()
            before = set(response.headers)
            self.frame_options.process_response(request, response)
            self.security.process_response(request, response)
            added = self._added_headers[secure] = [item for item in response.items() if item[0] not in before]
        return added

    def _counter(self, status: int):
        counter = self._counters.get(status)
        if counter is None:
            counter = self._counters[status] = WEBHOOKS.labels(str(status))
        return counter

    def _settings_changed(self, **kwargs):
        self._load()
