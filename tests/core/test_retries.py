"""Retry timing: exponential backoff with full jitter, and the service's Retry-After honoured."""

import random

from partner.core.retries import retry_countdown


def test_full_jitter_draws_from_zero_to_the_exponential_ceiling(settings):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = True
    random.seed(7)
    waits = [retry_countdown(3) for _ in range(2000)]  # ceiling 2 * 2**3 = 16 s
    assert all(0 <= wait <= 16 for wait in waits)
    # Full jitter, not equal jitter (which never waits less than half the ceiling).
    assert min(waits) < 1 and max(waits) > 15
    assert sum(wait < 8 for wait in waits) > 800


def test_without_jitter_the_ceiling_doubles_up_to_the_maximum(settings):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = False
    assert [retry_countdown(n) for n in range(10)] == [2, 4, 8, 16, 32, 64, 128, 256, 300, 300]


def test_retry_after_is_a_floor_capped_by_the_maximum(settings):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = True
    assert all(retry_countdown(0, retry_after=45) == 45 for _ in range(50))
    assert retry_countdown(0, retry_after=10_000) == 300
