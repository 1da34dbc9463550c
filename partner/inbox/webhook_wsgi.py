"""POST /v1/webhooks under `config.wsgi`: the URL map's view behind the middleware a webhook needs.

`config.wsgi` hands exactly `POST /v1/webhooks` to `WebhookHandler` and every other request to
Django's handler. `WebhookHandler` calls the view the URL map routes the webhook to
(`views.webhook_receive_view`, the view the test client, a live server and ASGI reach too) through
a chain of the MIDDLEWARE themselves, each wrapping the next as in Django's handler, less those in
SKIPPED_MIDDLEWARE (each with the reason it has nothing to do for a signed server-to-server POST).
So trusted proxies, the request id, the security headers and the HTTPS redirect, the host check,
X-Frame-Options and any middleware added later run as they do for every request. An exception
becomes Django's 500 (`convert_exception_to_response`: logged, got_request_exception); a 4xx/5xx
gets Django's django.request line, written inside the middleware so that it carries the request id.

What it leaves out of Django's WSGIHandler is generality one route never uses, at a cost in CPU per
webhook that bench/benchmarks/intake.py measures:
- resolving the URL per request: the route is resolved once, when the handler is made;
- the view, exception and template-response hooks of middleware: none of the kept middleware has
  one, and the handler refuses to start if one does;
- the request_started / request_finished signals: of their receivers, only the database
  connection's (`close_old_connections`, before and after: CONN_MAX_AGE, a connection left in a
  transaction or after an error closed) has work here and is called; reset_queries keeps no log
  without DEBUG, close_caches has no cache to close (the webhook reads none) and reset_urlconf no
  urlconf to reset (none is set).
"""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, MiddlewareNotUsed
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIRequest, get_script_name
from django.db import close_old_connections
from django.urls import resolve, set_script_prefix
from django.utils.log import log_response
from django.utils.module_loading import import_string

# The URL map's path of the webhook (config/urls.py, the partner API's routes; a test holds the two together).
WEBHOOK_PATH = "/v1/webhooks"

# The middleware the webhook goes without, and why each has nothing to do for it.
SKIPPED_MIDDLEWARE = {
    "whitenoise.middleware.WhiteNoiseMiddleware": "serves the files under STATIC_URL only",
    "django.contrib.sessions.middleware.SessionMiddleware": "no session: the webhook reads and sets no cookie",
    "django.middleware.csrf.CsrfViewMiddleware": "the view is exempt: a server-to-server POST signed by HMAC",
    "django.contrib.auth.middleware.AuthenticationMiddleware": "no user: the signature is the authentication",
    "django.contrib.messages.middleware.MessageMiddleware": "no messages without a session or a page",
    "partner.core.middleware.RequestSizeMiddleware": "the view refuses a Content-Length past WEBHOOK_MAX_BYTES "
    "(far below REQUEST_MAX_BYTES) itself, before reading, in the webhook's own answer (413)",
}
# Hooks Django's handler calls around the view, and this one does not.
_VIEW_HOOKS = ("process_view", "process_exception", "process_template_response")


def webhook_middleware() -> list[str]:
    """MIDDLEWARE, in its order, less SKIPPED_MIDDLEWARE."""
    return [path for path in settings.MIDDLEWARE if path not in SKIPPED_MIDDLEWARE]


def _logged(view):
    """`view`, its 4xx/5xx logged as Django's handler logs them, but inside the middleware: with the request id."""

    def answer(request):
        response = view(request)
        if response.status_code >= 400:
            log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
        return response

    return answer


class WebhookHandler(BaseHandler):
    """The WSGI application of `POST /v1/webhooks`: the URL map's view behind `webhook_middleware()`."""

    def __init__(self):
        super().__init__()
        self.load_middleware()

    def load_middleware(self, is_async=False):
        """The chain Django's handler builds (synchronous), over `webhook_middleware()`, the view innermost."""
        handler = convert_exception_to_response(_logged(resolve(WEBHOOK_PATH).func))
        for path in reversed(webhook_middleware()):
            try:
                middleware = import_string(path)(handler)
            except MiddlewareNotUsed:
                continue
            hooks = [hook for hook in _VIEW_HOOKS if hasattr(middleware, hook)]
            if hooks:
                raise ImproperlyConfigured(f"{path} has {', '.join(hooks)}, which WebhookHandler does not call")
            handler = convert_exception_to_response(middleware)
        self._middleware_chain = handler

    def __call__(self, environ, start_response):
        set_script_prefix(get_script_name(environ))
        close_old_connections()  # request_started's work for a webhook (see above)
        try:
            request = WSGIRequest(environ)
            response = self._middleware_chain(request)
            if response.status_code >= 400:  # one a middleware gave (a bad host); once only (log_response)
                log_response("%s: %s", response.reason_phrase, request.path, response=response, request=request)
        finally:
            close_old_connections()  # request_finished's
        start_response(f"{response.status_code} {response.reason_phrase}", list(response.items()))
        return [response.content]
