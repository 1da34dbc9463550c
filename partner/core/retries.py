"""Retry timing and budget shared by the tasks that call the service.

Four kinds of transient error, one rule (`retry_plan`):

- The service asked us to wait: a 429 or 503 whose answer carried Retry-After (RFC 9110
  §10.2.3; the errors of `partner.platform.errors` carry `.status` and `.retry_after`). The task
  is published again after that wait (capped by CELERY_TASK_RETRY_BACKOFF_MAX, 300 s) plus a
  small spread, and this costs none of its retries: a service that rate-limits us is obeyed, not
  counted as failing. These waits are bounded by time instead, CELERY_TASK_RATE_LIMIT_PATIENCE
  (an hour) from the first of them in the task's run chain (the time travels in the message, as
  the task keyword RATE_LIMITED_SINCE); past it, they count like any other error.
- One of our own services is away (`outage_of`): the database, the cache, the broker (Redis or
  RabbitMQ), seen as the connection error of its client (redis-py's ConnectionError or
  TimeoutError, kombu's or py-amqp's connection errors, Django's OperationalError or
  InterfaceError for a lost or refused connection, a socket error raised inside one of those
  clients). The task waits for it, and this costs none of its retries, for as long as it lasts:
  an outage of ours never fails an order, nor tells the lender anything; only the service's or
  the lender's answer may. The wait is up to as long as the outage has lasted so far (at least
  CELERY_TASK_RETRY_BACKOFF, at most CELERY_TASK_RETRY_BACKOFF_MAX), with full jitter; its start
  travels in the message, as the task keyword OUTAGE_SINCE. A bug is never an outage: any other
  error, a database error PostgreSQL answered (a deadlock, a timeout, a constraint), a socket
  error of any other code, stays a counted or an unexpected error.
- The service may have taken a request whose answer we never recorded (`AnswerAwaited`): the task
  waits for the service's own word (its callback) for the time the error names, and this costs
  none of its retries; the request is made again only if that word has not come by then.
- Anything else (5xx, a 429 or 503 without Retry-After, a lost connection to the service): a
  counted retry after an exponential backoff with full jitter (a wait drawn uniformly between 0
  and the exponential ceiling), at least the Retry-After a 5xx sent.

All three spread the tasks of many workers that failed together, so they do not come back to
the service (or to our own, once back) as one wave.

The budget of one task (a notification's processing, an order's pipeline run): inside a task
each call to the service is one attempt (`partner.platform.http.transport_retries_off`), and a
transient error schedules the task again (`task_retry`). The task gives up, and an order fails as
"gave up after retries", at its 1 + CELERY_TASK_MAX_RETRIES = 6th counted error; the counted waits
are drawn below ceilings of 2, 4, 8, 16 and 32 s (62 s at most in all, or up to 300 s each when a
5xx sent Retry-After: 25 minutes at worst). The waits the service asked for, up to 300 s each,
count nothing for CELERY_TASK_RATE_LIMIT_PATIENCE (an hour) after the first; past that they count
too, so a service that keeps rate-limiting us ends the task at its 6th counted error. No worker
process sleeps during any of it. Outside tasks (the origin proxy, the admin's product pull) the transport
retries a call itself, at most SVC_MAX_RETRIES (3) times, waiting at most SVC_RETRY_AFTER_MAX
(30 s) for a Retry-After.
"""

import random
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import kombu.exceptions
import redis.exceptions
from amqp.exceptions import RecoverableConnectionError
from celery.exceptions import Reject, Retry
from django.conf import settings
from django.db import utils as db_utils

# The answers whose Retry-After is the service asking us to wait rather than failing.
WAIT_ASKED_STATUSES = frozenset({429, 503})
# The task keyword that carries, from run to run, when the first wait the service asked for began
# (Unix time: the runs of a chain may be on different hosts). Every task retried here accepts it.
RATE_LIMITED_SINCE = "rate_limited_since"
# The task keyword that carries when the outage of one of our services the task waits for began
# (Unix time). Every task retried here accepts it.
OUTAGE_SINCE = "outage_since"
# A wait the service asked for is lengthened by up to a second, or a twentieth of it when longer,
# so a wave of workers told the same Retry-After does not come back at once.
WAIT_SPREAD_SECONDS = 1.0
WAIT_SPREAD_SHARE = 0.05


def backoff(retries: int, *, base: float, ceiling: float, jitter: bool = True) -> float:
    """The project's one backoff: seconds to wait after `retries` earlier retries (0 for the first).

    Exponential (`base` doubled per retry, at most `ceiling`) with full jitter: a wait drawn
    uniformly between 0 and that, so that many callers that failed together spread out instead of
    coming back as one wave. Used by the tasks (`retry_countdown`, `outage_countdown`), the
    transport's own retries (`partner.platform.http`), the connector's events
    (`partner.connector.sending`) and the sandbox's webhook deliveries.
    """
    top = min(float(ceiling), float(base) * (2 ** max(0, retries)))
    return random.uniform(0, top) if jitter else top


def retry_countdown(retries: int, *, retry_after: float | None = None) -> float:
    """Seconds to wait before attempt `retries + 1`; at least the service's Retry-After when it sent one."""
    wait = backoff(
        retries,
        base=settings.CELERY_TASK_RETRY_BACKOFF,
        ceiling=settings.CELERY_TASK_RETRY_BACKOFF_MAX,
        jitter=settings.CELERY_TASK_RETRY_JITTER,
    )
    if retry_after:
        wait = max(wait, min(float(retry_after), settings.CELERY_TASK_RETRY_BACKOFF_MAX))
    return wait


def wait_asked(exc: Exception) -> float | None:
    """The wait (seconds) the service asked for with Retry-After on a 429 or 503; None for any other error."""
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is None or getattr(exc, "status", None) not in WAIT_ASKED_STATUSES:
        return None
    return float(retry_after)


def asked_wait_countdown(retry_after: float) -> float:
    """Seconds to wait when the service asked for `retry_after`: that (capped), plus a small spread."""
    wait = min(max(0.0, retry_after), settings.CELERY_TASK_RETRY_BACKOFF_MAX)
    if settings.CELERY_TASK_RETRY_JITTER:
        wait += random.uniform(0, max(WAIT_SPREAD_SECONDS, WAIT_SPREAD_SHARE * wait))
    return wait


# Where our own services' clients live, by module, and the service each names. The innermost
# frame of them names it (a publish run by a database commit hook is the broker's), but Redis only
# when nothing else does (the cache and the broker both call the Redis client).
_SERVICE_MODULES = (
    ("django.core.cache", "the cache"),
    ("django.db", "the database"),
    ("psycopg", "the database"),
    ("kombu", "the broker"),
    ("amqp", "the broker"),
    ("celery", "the broker"),
    ("redis", "Redis"),
)
# PostgreSQL's answers that say the server is going away or cannot take us now (SQLSTATE class 08,
# connection exception; 57P01-57P03, shut down or starting; 53300, too many connections). Any other
# answer (a deadlock, a statement timeout, a constraint) is about what we asked: not an outage.
_DATABASE_AWAY_STATES = ("08", "57P01", "57P02", "57P03", "53300")
# The socket errors of a connection refused, reset, timed out or of a name not resolved.
_SOCKET_AWAY = (ConnectionError, TimeoutError, socket.gaierror)


def _service_in(exc: BaseException) -> str | None:
    """The service of ours in whose client `exc` was raised (`_SERVICE_MODULES`), if any."""
    found = None
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        module = frame.f_globals.get("__name__", "")
        for prefix, service in _SERVICE_MODULES:
            if (module == prefix or module.startswith(prefix + ".")) and (found is None or service != "Redis"):
                found = service
                break
    return found


def outage_of(exc: BaseException) -> str | None:
    """Which of our own services `exc` says is away ("the database", "the cache", "the broker",
    "Redis"), or None when `exc` is anything else (module docstring: what counts)."""
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return _service_in(exc) or "Redis"
    if isinstance(exc, kombu.exceptions.OperationalError | RecoverableConnectionError):
        return "the broker"
    if isinstance(exc, db_utils.OperationalError | db_utils.InterfaceError):
        driver_error = exc.__cause__  # PostgreSQL's driver's error, which Django wraps
        if not type(driver_error).__module__.startswith("psycopg"):
            return None  # SQLite's (a local file: no service to wait for), or one Django raised itself
        answered = getattr(driver_error, "sqlstate", None) or getattr(driver_error, "pgcode", None)
        if answered is None or answered.startswith(_DATABASE_AWAY_STATES):
            return "the database"  # no answer (refused, lost, closed), or the server going away
        return None
    if isinstance(exc, _SOCKET_AWAY):
        return _service_in(exc)  # only a socket of our services' clients, never one of ours or a fulfiller's
    return None


def outage_countdown(elapsed: float) -> float:
    """Seconds to wait while one of our services has been away for `elapsed` seconds: up to as long
    again (at least CELERY_TASK_RETRY_BACKOFF, at most CELERY_TASK_RETRY_BACKOFF_MAX), full jitter."""
    return backoff(
        0,
        base=max(float(settings.CELERY_TASK_RETRY_BACKOFF), float(elapsed)),
        ceiling=settings.CELERY_TASK_RETRY_BACKOFF_MAX,
        jitter=settings.CELERY_TASK_RETRY_JITTER,
    )


class AnswerAwaited(Exception):
    """The service may have taken a request of ours whose answer we never recorded: wait `seconds`
    for its callback before making the request again (module docstring)."""

    def __init__(self, message: str, *, seconds: float):
        super().__init__(message)
        self.seconds = seconds


@dataclass(frozen=True)
class RetryPlan:
    """When a task runs again after a transient error, and whether that spends one of its retries."""

    countdown: float
    counted: bool
    rate_limited_since: float | None  # carried to the next run (None: the service never asked us to wait)
    waiting_for: str | None = None  # the service of ours that is away (`outage_of`), when that is why
    outage_since: float | None = None  # carried to the next run while one of our services is away

    def reason(self, exc: BaseException) -> str:
        """Why the task waits, for the row's `last_error`: plain about a service of ours being away."""
        return outage_reason(self.waiting_for, exc) if self.waiting_for else str(exc)


def outage_reason(service: str, exc: BaseException) -> str:
    """What a row waiting for `service` (ours, away: `outage_of`) says in its `last_error`."""
    return f"Waiting for {service} (ours) to come back: {type(exc).__name__}: {exc}"


def retry_plan(
    exc: Exception,
    *,
    retries: int,
    rate_limited_since: float | None = None,
    outage_since: float | None = None,
    now: float | None = None,
) -> RetryPlan:
    """The rule (module docstring) for a task that ran `retries + 1` times and failed with `exc`."""
    if isinstance(exc, AnswerAwaited):
        return RetryPlan(countdown=max(0.0, exc.seconds), counted=False, rate_limited_since=rate_limited_since)
    away = outage_of(exc)
    if away is not None:
        now = time.time() if now is None else now
        since = now if outage_since is None else outage_since
        return RetryPlan(
            countdown=outage_countdown(now - since),
            counted=False,
            rate_limited_since=rate_limited_since,
            waiting_for=away,
            outage_since=since,
        )
    asked = wait_asked(exc)
    if asked is not None:
        now = time.time() if now is None else now
        since = now if rate_limited_since is None else rate_limited_since
        if now - since < settings.CELERY_TASK_RATE_LIMIT_PATIENCE:
            return RetryPlan(countdown=asked_wait_countdown(asked), counted=False, rate_limited_since=since)
        rate_limited_since = since
    countdown = retry_countdown(retries, retry_after=getattr(exc, "retry_after", None))
    return RetryPlan(countdown=countdown, counted=True, rate_limited_since=rate_limited_since)


def task_retry_plan(task, exc: Exception) -> RetryPlan:
    """`retry_plan` for the run of a bound Celery task that is handling `exc`."""
    request = task.request
    kwargs = request.kwargs or {}
    return retry_plan(
        exc,
        retries=request.retries,
        rate_limited_since=kwargs.get(RATE_LIMITED_SINCE),
        outage_since=kwargs.get(OUTAGE_SINCE),
    )


def task_retry(task, exc: Exception, plan: RetryPlan | None = None) -> Retry:
    """Schedule the bound task `task` again after the transient error `exc` (`raise task_retry(self, exc)`).

    A counted retry is Celery's `Task.retry` (which raises `exc` itself once the retries are spent).
    A wait the service asked for, or one for a service of ours that is away, publishes the same
    message again with its retries unchanged, as `Task.retry` would; an eager run (`Task.apply`)
    counts it instead, since eager runs do not wait and Celery's `apply` counts every retry.
    A task called directly re-raises `exc`.
    """
    plan = plan or task_retry_plan(task, exc)
    request = task.request
    kwargs = dict(request.kwargs or {})
    if plan.rate_limited_since is not None:
        kwargs[RATE_LIMITED_SINCE] = plan.rate_limited_since
    kwargs.pop(OUTAGE_SINCE, None)  # an outage over: the next one starts its own wait
    if plan.outage_since is not None:
        kwargs[OUTAGE_SINCE] = plan.outage_since
    if plan.counted or request.called_directly or request.is_eager:
        return task.retry(exc=exc, countdown=plan.countdown, kwargs=kwargs)
    signature = task.signature_from_request(request, None, kwargs, countdown=plan.countdown, retries=request.retries)
    try:
        signature.apply_async()
    except Exception as error:  # the broker refused it: drop this message, as Task.retry does
        raise Reject(error, requeue=False) from error
    return Retry(exc=exc, when=plan.countdown, sig=signature)


# The give-up policies of the two outbound channels, declared here, not inside their senders ------


@dataclass(frozen=True)
class CountBudget:
    """Give up at the `1 + retries()`th counted error: what a task calling the service may spend."""

    name: str
    retries: Callable[[], int]

    def spent(self, retries: int) -> bool:
        """Has a run that met a counted error after `retries` counted retries spent its budget?"""
        return retries >= self.retries()


@dataclass(frozen=True)
class TimeBudget:
    """Try again after the project's one backoff, for `patience()` seconds from the first failed
    try: the last try is at that moment. A try that got no answer waits at least `unanswered_wait()`
    more (the other end may still be working on it, and the next try must not reach it meanwhile)."""

    name: str
    base: Callable[[], float]
    ceiling: Callable[[], float]
    patience: Callable[[], float]
    unanswered_wait: Callable[[], float]

    def next_try(self, *, tries: int, failing_since: datetime, now: datetime, answered: bool = True) -> datetime | None:
        """When the thing whose `tries`-th try failed at `now`, failing since `failing_since`, is
        tried again; None when its patience is over."""
        give_up_at = failing_since + timedelta(seconds=self.patience())
        if now >= give_up_at:
            return None
        wait = backoff(tries - 1, base=self.base(), ceiling=self.ceiling())
        if not answered:
            wait = max(wait, self.unanswered_wait())
        return min(now + timedelta(seconds=wait), give_up_at)


# The platform channel: an order's run (or a notification's processing) gives up at its
# 1 + CELERY_TASK_MAX_RETRIES = 6th counted error (the module docstring: which errors count).
SERVICE_CALLS = CountBudget("calls to the service", retries=lambda: settings.CELERY_TASK_MAX_RETRIES)

# The connector channel: an event is tried for CONNECTOR_RETRY_PATIENCE (a day) from its first failed
# try, after waits drawn below a ceiling that starts at CONNECTOR_RETRY_BACKOFF and doubles per try up
# to CONNECTOR_RETRY_BACKOFF_MAX; a try that got no answer waits at least CONNECTOR_SEND_TIMEOUT more.
EVENT_SENDS = TimeBudget(
    "events to a partner system",
    base=lambda: settings.CONNECTOR_RETRY_BACKOFF,
    ceiling=lambda: settings.CONNECTOR_RETRY_BACKOFF_MAX,
    patience=lambda: settings.CONNECTOR_RETRY_PATIENCE,
    unanswered_wait=lambda: settings.CONNECTOR_SEND_TIMEOUT,
)
