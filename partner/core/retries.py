"""Retry timing shared by the tasks that call the service: exponential backoff with full jitter.

Full jitter (a wait drawn uniformly between 0 and the exponential ceiling) spreads the retries
of many workers that failed together, so they do not come back to the service as one wave.

The budget of one task (a notification's processing, an order's pipeline run): inside a task
each call to the service is one attempt (`partner.platform.http.transport_retries_off`), and a
429, 5xx or lost connection schedules the task again, so a call is tried at most
1 + CELERY_TASK_MAX_RETRIES = 6 times. The waits between runs are drawn below ceilings of 2, 4,
8, 16 and 32 s (62 s at most in all), or are the service's Retry-After when longer, up to
CELERY_TASK_RETRY_BACKOFF_MAX (300 s) each: at most 25 minutes before the order fails as
"gave up after retries". No worker process sleeps during any of it. Outside tasks (the origin
proxy, the admin's product pull) the transport retries a call itself, at most SVC_MAX_RETRIES
(3) times, waiting at most SVC_RETRY_AFTER_MAX (30 s) for a Retry-After.
"""

import random

from django.conf import settings


def retry_countdown(retries: int, *, retry_after: float | None = None) -> float:
    """Seconds to wait before attempt `retries + 1`; at least the service's Retry-After when it sent one."""
    ceiling = min(settings.CELERY_TASK_RETRY_BACKOFF_MAX, settings.CELERY_TASK_RETRY_BACKOFF * (2**retries))
    wait = random.uniform(0, ceiling) if settings.CELERY_TASK_RETRY_JITTER else ceiling
    if retry_after:
        wait = max(wait, min(float(retry_after), settings.CELERY_TASK_RETRY_BACKOFF_MAX))
    return wait
