"""Retry timing and budget shared by the tasks that call the service.

Two kinds of transient error, two rules (`retry_plan`):

- The service asked us to wait: a 429 or 503 whose answer carried Retry-After (RFC 9110
  §10.2.3; the errors of `partner.platform.errors` carry `.status` and `.retry_after`). The task
  is published again after that wait (capped by CELERY_TASK_RETRY_BACKOFF_MAX, 300 s) plus a
  small spread, and this costs none of its retries: a service that rate-limits us is obeyed, not
  counted as failing. These waits are bounded by time instead, CELERY_TASK_RATE_LIMIT_PATIENCE
  (an hour) from the first of them in the task's run chain (the time travels in the message, as
  the task keyword RATE_LIMITED_SINCE); past it, they count like any other error.
- Anything else (5xx, a 429 or 503 without Retry-After, a lost connection): a counted retry
  after an exponential backoff with full jitter (a wait drawn uniformly between 0 and the
  exponential ceiling), at least the Retry-After a 5xx sent.

Both spread the tasks of many workers that failed together, so they do not come back to the
service as one wave.

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
import time
from dataclasses import dataclass

from celery.exceptions import Reject, Retry
from django.conf import settings

# The answers whose Retry-After is the service asking us to wait rather than failing.
WAIT_ASKED_STATUSES = frozenset({429, 503})
# The task keyword that carries, from run to run, when the first wait the service asked for began
# (Unix time: the runs of a chain may be on different hosts). Every task retried here accepts it.
RATE_LIMITED_SINCE = "rate_limited_since"
# A wait the service asked for is lengthened by up to a second, or a twentieth of it when longer,
# so a wave of workers told the same Retry-After does not come back at once.
WAIT_SPREAD_SECONDS = 1.0
WAIT_SPREAD_SHARE = 0.05


def backoff(retries: int, *, base: float, ceiling: float, jitter: bool = True) -> float:
    """The project's one backoff: seconds to wait after `retries` earlier retries (0 for the first).

    Exponential (`base` doubled per retry, at most `ceiling`) with full jitter: a wait drawn
    uniformly between 0 and that, so that many callers that failed together spread out instead of
    coming back as one wave. Used by the tasks (`retry_countdown`), the transport's own retries
    (`partner.platform.http`), the connector's events (`partner.connector.sending`) and the
    sandbox's webhook deliveries.
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


@dataclass(frozen=True)
class RetryPlan:
    """When a task runs again after a transient error, and whether that spends one of its retries."""

    countdown: float
    counted: bool
    rate_limited_since: float | None  # carried to the next run (None: the service never asked us to wait)


def retry_plan(
    exc: Exception, *, retries: int, rate_limited_since: float | None = None, now: float | None = None
) -> RetryPlan:
    """The rule (module docstring) for a task that ran `retries + 1` times and failed with `exc`."""
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
    return retry_plan(exc, retries=request.retries, rate_limited_since=(request.kwargs or {}).get(RATE_LIMITED_SINCE))


def task_retry(task, exc: Exception, plan: RetryPlan | None = None) -> Retry:
    """Schedule the bound task `task` again after the transient error `exc` (`raise task_retry(self, exc)`).

    A counted retry is Celery's `Task.retry` (which raises `exc` itself once the retries are spent).
    A wait the service asked for publishes the same message again with its retries unchanged, as
    `Task.retry` would; an eager run (`Task.apply`) counts it instead, since eager runs do not wait
    and Celery's `apply` counts every retry. A task called directly re-raises `exc`.
    """
    plan = plan or task_retry_plan(task, exc)
    request = task.request
    kwargs = dict(request.kwargs or {})
    if plan.rate_limited_since is not None:
        kwargs[RATE_LIMITED_SINCE] = plan.rate_limited_since
    if plan.counted or request.called_directly or request.is_eager:
        return task.retry(exc=exc, countdown=plan.countdown, kwargs=kwargs)
    signature = task.signature_from_request(request, None, kwargs, countdown=plan.countdown, retries=request.retries)
    try:
        signature.apply_async()
    except Exception as error:  # the broker refused it: drop this message, as Task.retry does
        raise Reject(error, requeue=False) from error
    return Retry(exc=exc, when=plan.countdown, sig=signature)
