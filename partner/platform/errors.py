"""Errors of calls to the service: two kinds, told apart by whether a request was made.

`ServiceError` and its subclasses: a request was made and failed. Each says which call failed
(method, URL), what the service answered (status, a short excerpt of the body; no status when no
answer came: a connection error or a timeout) and whether trying again later makes sense
(`transient`), so a Celery task can decide between retry and give up without parsing texts. The
excerpt is cut short and passed through the log redaction, so it never carries a token, a
password or a signature.

`RequestRefused` and its subclasses: we refused to send the request, so nothing reached the
service and there is no status to tell (an id that may not be placed in a path, an upload
location we do not send documents to). Never transient: the same request is refused every time.
It is not a ServiceError: a caller that handles the service's failures handles these on purpose.
"""

import json
from datetime import UTC
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.utils import timezone

from partner.core.logging import redact

EXCERPT_LENGTH = 300


def url_display(url: str) -> str:
    """The URL without user info, query or fragment, for errors and logs.

    Upload locations may carry a signature in their query; our own API URLs
    carry at most `start`/`limit`, which the method and path make clear anyway.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def service_path(url: str | None) -> str:
    """A service URL as its path (`/partner/v2/...`), for a reason staff and the lender read."""
    return url.removeprefix(settings.SVC_BASE_URL) if url else ""


def excerpt_of(text: str | None) -> str:
    """A short, single-line, redacted excerpt of a response body."""
    if not text:
        return ""
    text = " ".join(text[: EXCERPT_LENGTH * 2].split())
    text = redact(text)
    if len(text) > EXCERPT_LENGTH:
        text = text[: EXCERPT_LENGTH - 1] + "…"
    return text


def retry_after_parse(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - timezone.now()).total_seconds())


def _described(message: str, method: str | None, url: str | None) -> str:
    """The message, and the call it is about when known: `message — METHOD URL`."""
    if method or url:
        return f"{message} — {method or '?'} {url or '?'}"
    return message


class RequestRefused(Exception):
    """We refused to send a request: nothing reached the service. Subclasses say why.

    `method` and `url` (without user info, query or fragment) name the call when known, as in a
    ServiceError; there is no status, since the service was never asked.
    """

    transient = False

    def __init__(self, message: str, *, method: str | None = None, url: str | None = None):
        super().__init__(message)
        self.message = message
        self.method = method
        self.url = url_display(url) if url else url

    def __str__(self):
        return _described(self.message, self.method, self.url)


class ServiceError(Exception):
    """A call to the service failed. Subclasses say how."""

    transient = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str | None = None,
        url: str | None = None,
        excerpt: str = "",
    ):
        super().__init__(message)
        self.message = message
        self.status = status
        self.method = method
        self.url = url_display(url) if url else url
        self.excerpt = excerpt

    def __str__(self):
        text = _described(self.message, self.method, self.url)
        if self.status is not None:
            text += f" — HTTP {self.status}"
        if self.excerpt:
            text += f": {self.excerpt}"
        return text


class ServiceAuthenticationError(ServiceError):
    """401/403: the access token, the client credentials or the partner access token were refused."""


class ServiceNotFoundError(ServiceError):
    """404: no such origin, transaction, event or product (or not visible to us)."""


class ServiceValidationError(ServiceError):
    """400/409/422: the service refused what we sent. `.body` is its parsed JSON answer, if any."""

    def __init__(self, message, *, body=None, **kwargs):
        super().__init__(message, **kwargs)
        self.body = body


class ServiceRateLimitError(ServiceError):
    """429: too many requests. `.retry_after` is the wait the service asked for, in seconds, if any."""

    transient = True

    def __init__(self, message, *, retry_after: float | None = None, **kwargs):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServiceUnavailableError(ServiceError):
    """5xx, a connection error or a timeout: the service may answer later.

    `.retry_after`: the wait a 503 asked for with Retry-After (RFC 9110 §10.2.3), if any.
    """

    transient = True

    def __init__(self, message, *, retry_after: float | None = None, **kwargs):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ResourceOutsideServiceError(RequestRefused):
    """A URL (e.g. a webhook's `meta.resourceRef`) that is not a resource of the configured service:
    nothing is sent to it."""


def error_from_response(response, *, method: str, url: str | None = None, what: str = "service call") -> ServiceError:
    """The ServiceError that matches an unwanted HTTP response."""
    status = response.status_code
    url = url or response.url
    try:
        text = response.text
    except Exception:  # undecodable body: the status says enough
        text = ""
    kwargs = {"status": status, "method": method, "url": url, "excerpt": excerpt_of(text)}
    if status in (401, 403):
        return ServiceAuthenticationError(f"{what} refused: not authorised", **kwargs)
    if status == 404:
        return ServiceNotFoundError(f"{what}: not found", **kwargs)
    if status in (400, 409, 422):
        try:
            body = json.loads(text) if text else None
        except ValueError:
            body = None
        return ServiceValidationError(f"{what} rejected", body=body, **kwargs)
    if status == 429:
        retry_after = retry_after_parse(response.headers.get("Retry-After"))
        return ServiceRateLimitError(f"{what} rate limited", retry_after=retry_after, **kwargs)
    if status >= 500:
        retry_after = retry_after_parse(response.headers.get("Retry-After"))
        return ServiceUnavailableError(f"{what}: service unavailable", retry_after=retry_after, **kwargs)
    if 300 <= status < 400:
        return ServiceError(f"{what} answered a redirect, which is not followed", **kwargs)
    return ServiceError(f"{what}: unexpected answer", **kwargs)
