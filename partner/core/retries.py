"""Retry timing shared by the tasks that call the service: exponential backoff with full jitter.

Full jitter (a wait drawn uniformly between 0 and the exponential ceiling) spreads the retries
of many workers that failed together, so they do not come back to the service as one wave.
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
