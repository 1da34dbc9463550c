"""The transport to the service: retries, errors and observability, over the outbound module.

- Every exchange goes through `partner.core.outbound`: one pooled session per process for the API
  and the token endpoint, and a second one, which never carries our bearer token, for upload
  locations (pid-aware, without proxy variables or ~/.netrc, no cookies); the SVC_TIMEOUT
  (connect, read) timeout on every socket operation, and the sum of the two as a deadline on the
  whole exchange of an API call; each try noted (`outbound.Try`) and counted.
- Redirects are never followed and a 3xx is an error: the spec has none, and requests would
  carry headers other than Authorization (the partner access token) to whatever host a redirect
  names.
- Retries with exponential backoff and jitter on connection errors, timeouts,
  429 and 5xx, honouring Retry-After, only when the caller says repeating the
  request is harmless (GET and PUT; POST/PATCH only where a function documents
  why). A Retry-After longer than SVC_RETRY_AFTER_MAX is not waited for: the
  429 is raised and the caller (a Celery task) retries later.
- Inside a Celery task there is one retry layer only, the task's: `transport_retries_off()`
  (entered around every task by `config/celery.py`) makes each call one attempt, and a
  429, 5xx or lost connection goes back to the task, which is scheduled again for the
  Retry-After or a backoff with full jitter (`partner.core.retries`). No worker process
  sleeps on the service.
- Every HTTP exchange sends `service_call_finished` (or `token_requested`).
"""

import contextlib
import contextvars
import json
import logging
import time

import requests
from django.conf import settings

from partner.core import outbound
from partner.core.retries import backoff
from partner.platform.errors import (
    RequestRefused,
    ServiceError,
    ServiceUnavailableError,
    error_from_response,
    retry_after_parse,
    url_display,
)
from partner.platform.signals import service_call_finished

logger = logging.getLogger(__name__)

USER_AGENT = "partner-application/0.1 (+python-requests)"
CHANNEL = "service"  # the outbound channel of the service's API and upload locations
TOKEN_CHANNEL = "token"  # noqa: S105 - the token endpoint's channel: never kept with a delivery's tries
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_HEADERS = {"User-Agent": USER_AGENT, "Accept": "application/json"}


def session_api() -> requests.Session:
    """This process's pooled session for the service's API and token endpoint."""
    return outbound.pooled("api", headers=_HEADERS)


def session_upload() -> requests.Session:
    """This process's pooled session for upload locations: no bearer token is ever set on it."""
    session = outbound.pooled("upload", headers=_HEADERS)
    session.headers.pop("Authorization", None)
    return session


def sessions_close() -> None:
    """Close this process's sessions (tests; worker shutdown)."""
    outbound.sessions_close()


# Off inside a Celery task: the task's retry is then the only one (see the module docstring).
_transport_retries = contextvars.ContextVar("transport_retries", default=True)


def transport_retries_set(enabled: bool) -> None:
    """For the current thread (a task's): retry in the transport (the default), or leave it to the caller."""
    _transport_retries.set(enabled)


@contextlib.contextmanager
def transport_retries_off():
    """Within the block, every call is one attempt: its caller retries (a Celery task, later)."""
    token = _transport_retries.set(False)
    try:
        yield
    finally:
        _transport_retries.reset(token)


def retry_allowed(method: str, *, harmless: bool = False) -> bool:
    """May a failed request of `method` be sent again? Idempotent methods, or what the caller vouches for."""
    return method.upper() in IDEMPOTENT_METHODS or harmless


def status_retryable(status: int) -> bool:
    return status == 429 or 500 <= status <= 599


def backoff_delay(attempt: int, *, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt` (1 for the first retry).

    The project's one backoff (`partner.core.retries.backoff`: SVC_RETRY_BACKOFF doubled per
    attempt, at most SVC_RETRY_BACKOFF_MAX, full jitter); never shorter than a Retry-After the
    service asked for.
    """
    delay = backoff(attempt - 1, base=settings.SVC_RETRY_BACKOFF, ceiling=settings.SVC_RETRY_BACKOFF_MAX)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def _transport_retryable(err: requests.RequestException) -> bool:
    if outbound.address_refused(err):
        return False  # an address the call may not go to: refused again every time
    return isinstance(err, requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError)


def send(
    method: str,
    url: str,
    *,
    session: requests.Session,
    retry: bool,
    signal=service_call_finished,
    rewind=None,
    channel: str = CHANNEL,
    whole: bool = True,
    address_refusal=None,
    **kwargs,
) -> requests.Response:
    """Send one request (plus retries when `retry`), and return the last response, whatever its status.

    Raises ServiceUnavailableError when no answer came (connection error or
    timeout, after the retries) and RequestRefused for a request that cannot be
    sent at all (bad URL). `rewind` is called before each resend (to seek a
    streamed body back to its start). Each attempt is one exchange of `partner.core.outbound`,
    noted as a try of `channel`; `whole`: the exchange has a deadline, the sum of SVC_TIMEOUT's
    connect and read timeouts (off for an upload, whose sending takes as long as its file);
    `address_refusal`: the addresses the call may not connect to (`outbound.exchange`), a refused
    one raising RequestRefused.

    Long because it is the transport's one retry loop: connection errors and retryable
    statuses, each attempt signalled and logged, read best as one piece.
    """
    method = method.upper()
    attempts = 1 + (max(0, int(settings.SVC_MAX_RETRIES)) if retry and _transport_retries.get() else 0)
    shown = url if url.startswith(settings.SVC_BASE_URL + "/") else url_display(url)
    if kwargs.get("params") and shown == url:
        prepared = requests.models.PreparedRequest()
        prepared.prepare_url(url, kwargs["params"])
        shown = prepared.url  # pages are told apart by start/limit
    retry_after_max = settings.SVC_RETRY_AFTER_MAX
    for attempt in range(1, attempts + 1):
        if attempt > 1 and rewind is not None:
            rewind()
        started = time.monotonic()
        try:
            response = outbound.exchange(
                method,
                url,
                channel=channel,
                session=session,
                timeout=settings.SVC_TIMEOUT,
                deadline=sum(settings.SVC_TIMEOUT) if whole else None,
                shown=shown,
                address_refusal=address_refusal,
                **kwargs,
            )
        except requests.RequestException as err:
            duration = time.monotonic() - started
            signal.send(
                sender=send,
                method=method,
                url=shown,
                status=None,
                duration=duration,
                attempt=attempt,
                error=type(err).__name__,
            )
            if not _transport_retryable(err):
                raise RequestRefused(
                    f"request could not be sent ({type(err).__name__})", method=method, url=url
                ) from err
            if attempt < attempts:
                delay = backoff_delay(attempt)
                logger.warning(
                    "%s %s failed (%s), retry %d in %.2fs", method, shown, type(err).__name__, attempt, delay
                )
                time.sleep(delay)
                continue
            raise ServiceUnavailableError(f"no answer ({type(err).__name__})", method=method, url=url) from err
        duration = time.monotonic() - started
        status = response.status_code
        signal.send(
            sender=send, method=method, url=shown, status=status, duration=duration, attempt=attempt, error=None
        )
        logger.info("%s %s -> %s in %.3fs (attempt %d)", method, shown, status, duration, attempt)
        if attempt < attempts and status_retryable(status):
            retry_after = retry_after_parse(response.headers.get("Retry-After"))
            if retry_after is None or retry_after <= retry_after_max:
                delay = backoff_delay(attempt, retry_after=retry_after)
                logger.warning("%s %s -> %s, retry %d in %.2fs", method, shown, status, attempt, delay)
                response.close()
                time.sleep(delay)
                continue
        return response
    raise AssertionError("unreachable")  # the loop returns or raises


def response_json(response: requests.Response, *, method: str, what: str, empty_ok: bool = False):
    """The JSON body of a 200 answer; any other status raises the matching ServiceError.

    The spec: "Service REST call does not return 200: treated as failure".
    """
    if response.status_code != 200:
        raise error_from_response(response, method=method, what=what)
    if not response.content:
        if empty_ok:
            return None
        raise ServiceError(f"{what}: empty answer", status=200, method=method, url=response.url)
    try:
        return response.json()
    except (ValueError, json.JSONDecodeError) as err:
        raise ServiceError(
            f"{what}: answer is not JSON", status=200, method=method, url=response.url, excerpt=""
        ) from err
