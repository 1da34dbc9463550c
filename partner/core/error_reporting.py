"""Error reporting to Sentry, on only when SENTRY_DSN is set (config/settings/observability.py starts it).

Errors of requests (Django), of tasks (Celery) and lines logged at ERROR are sent with what the
SDK gathers, less what must not leave us. Every event and transaction, with its breadcrumbs (the
lines logged before, the calls made), goes through `event_scrub` once the SDK has turned it into
plain data, just before it is sent:

- every text in it is masked as a log line is (`partner.core.logging.redact`): the configured
  secrets, those registered at run time with `secret_register` (access tokens, products' signing
  secrets), and anything that looks like `token=...`, `password: ...` or `Bearer ...` (so the
  origin page's `?partnerAccessToken=` in a URL or a query string);
- the headers that carry credentials (Authorization, Cookie, the partner access token header
  X-Svc-PAT, the webhook signature header) are masked, cookies dropped;
- request bodies are never read nor sent: webhooks and the order form carry borrowers' data.

The SDK is also told not to send personal data (`send_default_pii=False`: no user, no client
address) nor the local variables of stack frames, which hold loan data; the stack frames
themselves (file, line, code) are sent.
"""

import functools
import warnings
from collections.abc import Iterable

from partner.core.logging import MASK, redact

# Lower-case names; the service's own header names are added from the settings.
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie", "x-csrftoken"})


def error_reporting_init(
    *,
    dsn: str,
    environment: str | None = None,
    traces_sample_rate: float | None = None,
    secret_headers: Iterable[str] = (),
    transport=None,
) -> bool:
    """Start the Sentry SDK when `dsn` is given; True when started.

    `secret_headers` are the service's credential headers (SVC_PAT_HEADER, SVC_SIGNATURE_HEADER);
    `transport` replaces the SDK's HTTP transport (tests capture the envelopes with it).
    """
    if not dsn:
        return False
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration
    from sentry_sdk.utils import BadDsn

    headers = _SECRET_HEADERS | {name.lower() for name in secret_headers}
    scrub = functools.partial(event_scrub, secret_headers=headers)
    try:
        with warnings.catch_warnings():
            # The SDK now prefers `data_collection` to `send_default_pii` and warns; setting it would also
            # turn off the SDK's own EventScrubber (a second layer under event_scrub), so not yet.
            warnings.filterwarnings("ignore", "The send_default_pii option is deprecated", DeprecationWarning)
            sentry_sdk.init(
                dsn=dsn,
                environment=environment or None,
                traces_sample_rate=traces_sample_rate,
                integrations=[DjangoIntegration(), CeleryIntegration()],
                send_default_pii=False,
                include_local_variables=False,
                max_request_body_size="never",
                before_send=scrub,
                before_send_transaction=scrub,  # breadcrumbs are sent inside these two, after this scrub
                transport=transport,
            )
    except BadDsn:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            "SENTRY_DSN is malformed: https://<key>@<host>/<project>; see .env.example"
        ) from None
    return True


def event_scrub(event: dict, hint: dict | None = None, *, secret_headers: frozenset[str] = _SECRET_HEADERS) -> dict:
    """`event` (an error or a transaction, as plain data) without secrets, credential headers or request bodies."""
    request = event.get("request")
    if isinstance(request, dict):
        request.pop("data", None)
        request.pop("cookies", None)
        headers = request.get("headers")
        if isinstance(headers, dict):
            for name in headers:
                if name.lower() in secret_headers:
                    headers[name] = MASK
    return _masked(event)


def _masked(value):
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(item) for item in value]
    return value
