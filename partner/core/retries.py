"""Retry timing shared by the tasks that call the service: exponential backoff with full jitter."""

import random

from django.conf import settings


def retry_countdown(retries: int, *, retry_after: float | None = None) -> float:
    """Seconds to wait before attempt `retries + 1`; honours the service's Retry-After when longer."""
    ceiling = min(settings.CELERY_TASK_RETRY_BACKOFF_MAX, settings.CELERY_TASK_RETRY_BACKOFF * (2**retries))
    wait = random.uniform(ceiling / 2, ceiling) if settings.CELERY_TASK_RETRY_JITTER else ceiling
    if retry_after:
        wait = max(wait, min(float(retry_after), settings.CELERY_TASK_RETRY_BACKOFF_MAX))
    return wait
