"""Retry timing and budget: exponential backoff with full jitter; a wait the service asked for
(429/503 with Retry-After) honoured without spending a retry, for CELERY_TASK_RATE_LIMIT_PATIENCE."""

import random
import time
from contextlib import contextmanager

import psycopg
import pytest
import redis
from celery.exceptions import Retry

from partner.core.retries import (
    OUTAGE_SINCE,
    RATE_LIMITED_SINCE,
    RetryPlan,
    outage_of,
    retry_countdown,
    retry_plan,
    task_retry,
)
from partner.platform.errors import ServiceRateLimitError, ServiceUnavailableError
from tests.helpers.ports import free_port


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


# --- The service asked us to wait (429/503 with Retry-After): not counted, for a while ---------------------


def rate_limited(retry_after=10.0):
    return ServiceRateLimitError("rate limited", status=429, retry_after=retry_after)


def test_a_wait_the_service_asked_for_is_its_retry_after_plus_a_bounded_spread_and_is_not_counted(settings):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = True
    settings.CELERY_TASK_RATE_LIMIT_PATIENCE = 3600
    random.seed(3)
    plans = [retry_plan(rate_limited(10), retries=4, now=1000.0) for _ in range(500)]
    assert not any(plan.counted for plan in plans)
    assert {plan.rate_limited_since for plan in plans} == {1000.0}  # the first wait starts the patience
    waits = [plan.countdown for plan in plans]
    # Never before the wait asked for, at most a second later; not the exponential ceiling (2 * 2**4 = 32 s).
    assert all(10 <= wait <= 11 for wait in waits)
    assert min(waits) < 10.1 and max(waits) > 10.9  # spread over the second, not one instant
    # A long wait is spread over a twentieth of it; a Retry-After is still capped by the maximum.
    long_waits = [retry_plan(rate_limited(200), retries=0, now=0.0).countdown for _ in range(500)]
    assert all(200 <= wait <= 210 for wait in long_waits) and max(long_waits) > 208
    assert all(300 <= retry_plan(rate_limited(10_000), retries=0).countdown <= 315 for _ in range(50))


def test_a_503_with_retry_after_is_a_wait_asked_for_too(settings):
    settings.CELERY_TASK_RETRY_JITTER = False
    unavailable = ServiceUnavailableError("unavailable", status=503, retry_after=7.0)
    assert retry_plan(unavailable, retries=5, now=50.0) == RetryPlan(
        countdown=7.0, counted=False, rate_limited_since=50.0
    )


def test_rate_limited_waits_count_once_the_patience_from_the_first_has_passed(settings):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = False
    settings.CELERY_TASK_RATE_LIMIT_PATIENCE = 600
    within = retry_plan(rate_limited(10), retries=1, rate_limited_since=1000.0, now=1599.0)
    assert within == RetryPlan(countdown=10.0, counted=False, rate_limited_since=1000.0)  # the first wait's time kept
    past = retry_plan(rate_limited(10), retries=1, rate_limited_since=1000.0, now=1600.0)
    # Counted like any other error: the backoff ceiling (2 * 2**1), never shorter than the Retry-After.
    assert past == RetryPlan(countdown=10.0, counted=True, rate_limited_since=1000.0)
    assert retry_plan(rate_limited(1), retries=4, rate_limited_since=1000.0, now=1600.0).countdown == 32
    settings.CELERY_TASK_RATE_LIMIT_PATIENCE = 0  # no patience: every wait counts, as before
    assert retry_plan(rate_limited(10), retries=0, now=5.0).counted


@pytest.mark.parametrize(
    "error",
    [
        ServiceUnavailableError("server error", status=500, retry_after=None),
        ServiceUnavailableError("bad gateway with Retry-After", status=502, retry_after=3.0),
        ServiceUnavailableError("unavailable without Retry-After", status=503, retry_after=None),
        ServiceRateLimitError("rate limited without Retry-After", status=429, retry_after=None),
        ServiceUnavailableError("connection lost", retry_after=None),
    ],
    ids=str,
)
def test_without_a_wait_asked_for_every_transient_error_counts_with_backoff(settings, error):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = True
    random.seed(11)
    plans = [retry_plan(error, retries=3, now=100.0) for _ in range(500)]
    assert all(plan.counted and plan.rate_limited_since is None for plan in plans)
    floor = error.retry_after or 0
    assert all(floor <= plan.countdown <= 16 for plan in plans)  # full jitter below the ceiling 2 * 2**3
    assert min(plan.countdown for plan in plans) < floor + 1


# --- One of our own services away: waited for, never counted; a bug is never an outage ----------------------


def raised(action) -> BaseException:
    """The error `action` raises, with its traceback (where it was raised is part of what it says)."""
    try:
        action()
    except BaseException as exc:  # noqa: BLE001 - any error is the test's subject
        return exc
    raise AssertionError("no error raised")


def django_wrapped(driver_error: Exception) -> Exception:
    """`driver_error` as Django raises it: wrapped in django.db.utils' error of the same name."""
    from django.db import connection

    def wrap():
        with connection.wrap_database_errors:
            raise driver_error

    return raised(wrap)


def cache_away():
    from django.core.cache.backends.redis import RedisCache

    RedisCache(f"redis://127.0.0.1:{free_port()}/0", {}).get("svc:token")


def redis_away():
    redis.Redis(port=free_port(), socket_connect_timeout=1).ping()


def kombu_away(scheme: str):
    import kombu

    def connect():
        with kombu.Connection(f"{scheme}://guest:guest@127.0.0.1:{free_port()}//", connect_timeout=1) as connection:
            connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0)

    return connect


def amqp_socket_away():
    import amqp

    amqp.Connection(host=f"127.0.0.1:{free_port()}", connect_timeout=1).connect()


def database_refused() -> Exception:
    return raised(lambda: psycopg.connect(host="127.0.0.1", port=free_port(), user="x", connect_timeout=1))


def our_own_socket():
    import socket

    socket.create_connection(("127.0.0.1", free_port()), timeout=1)  # a fulfiller's call of its own


@pytest.mark.parametrize(
    ("make", "service"),
    [
        (lambda: raised(cache_away), "the cache"),  # the issue's: ConnectionError: Error 111 connecting to ...
        (lambda: raised(redis_away), "Redis"),
        (lambda: redis.exceptions.TimeoutError("Timeout reading from socket"), "Redis"),
        (lambda: raised(kombu_away("redis")), "the broker"),
        (lambda: raised(kombu_away("amqp")), "the broker"),
        (lambda: raised(amqp_socket_away), "the broker"),  # an OSError inside the broker's client
        (lambda: django_wrapped(database_refused()), "the database"),
        (lambda: django_wrapped(psycopg.InterfaceError("the connection is closed")), "the database"),
        (lambda: django_wrapped(psycopg.errors.AdminShutdown("terminating connection")), "the database"),
        (
            lambda: django_wrapped(psycopg.errors.CannotConnectNow("the system is starting up")),
            "the database",
        ),
    ],
    ids=[
        "cache",
        "redis",
        "redis-timeout",
        "broker-redis",
        "broker-rabbitmq",
        "amqp-socket",
        "database-refused",
        "database-closed",
        "database-shutdown",
        "database-starting",
    ],
)
def test_an_outage_of_ours_is_waited_for_without_counting(settings, make, service):
    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_BACKOFF_MAX = 2, 300
    settings.CELERY_TASK_RETRY_JITTER = False
    error = make()
    assert outage_of(error) == service
    # Past the last counted retry, still waited for: the first wait at least the backoff's base...
    first = retry_plan(error, retries=settings.CELERY_TASK_MAX_RETRIES + 3, now=1000.0)
    assert first == RetryPlan(
        countdown=2.0, counted=False, rate_limited_since=None, waiting_for=service, outage_since=1000.0
    )
    assert first.reason(error).startswith(f"Waiting for {service} (ours) to come back: {type(error).__name__}: ")
    # ... then up to as long as the outage has lasted so far, at most the maximum.
    assert retry_plan(error, retries=0, outage_since=1000.0, now=1040.0).countdown == 40.0
    assert retry_plan(error, retries=0, outage_since=1000.0, now=9000.0).countdown == 300.0


@pytest.mark.parametrize(
    "make",
    [
        lambda: KeyError("partnerStatus"),  # a bug
        lambda: raised(our_own_socket),  # a socket of no service of ours
        lambda: FileNotFoundError(2, "No such file or directory"),
        lambda: django_wrapped(psycopg.errors.DeadlockDetected("deadlock detected")),
        lambda: django_wrapped(psycopg.errors.QueryCanceled("canceling statement due to timeout")),
        lambda: django_wrapped(psycopg.errors.UniqueViolation("duplicate key")),
    ],
    ids=["bug", "other-socket", "file", "deadlock", "statement-timeout", "constraint"],
)
def test_a_bug_or_an_answer_of_the_database_is_no_outage(settings, make):
    settings.CELERY_TASK_RETRY_JITTER = False
    error = make()
    assert outage_of(error) is None
    plan = retry_plan(error, retries=1, now=1000.0)
    assert plan.counted and plan.waiting_for is None and plan.outage_since is None


def test_sqlites_operational_error_is_no_outage():
    import sqlite3

    from django.db import utils

    error = utils.OperationalError("no such table: fulfillment_order")
    error.__cause__ = sqlite3.OperationalError("no such table: fulfillment_order")
    assert outage_of(error) is None


# --- task_retry: what a task run publishes ------------------------------------------------------------------


@pytest.fixture
def published(monkeypatch):
    """The messages a retry publishes, as the options given to `send_task`, instead of the broker."""
    from config.celery import app

    sent = []

    def send_task(name, args=None, kwargs=None, **options):
        sent.append({"name": name, "kwargs": kwargs, **options})

    monkeypatch.setattr(app, "send_task", send_task)
    return sent


@contextmanager
def running(task, *, retries: int, **kwargs):
    """`task` as a worker runs it: a request of a message with `kwargs`, retried `retries` times."""
    task.push_request(
        id="task-1",
        retries=retries,
        args=[],
        kwargs=kwargs,
        called_directly=False,
        is_eager=False,
        delivery_info={"exchange": "", "routing_key": "celery"},
    )
    try:
        yield task
    finally:
        task.pop_request()


def test_a_wait_asked_for_publishes_the_task_again_with_its_retries_unchanged(settings, published):
    from partner.inbox.tasks import process_notification

    settings.CELERY_TASK_RETRY_JITTER = False
    settings.CELERY_TASK_RATE_LIMIT_PATIENCE = 3600
    before = time.time()
    with running(process_notification, retries=process_notification.max_retries, notification_id=7) as task:
        outcome = task_retry(task, rate_limited(4))

    assert isinstance(outcome, Retry) and outcome.when == 4.0
    [message] = published
    assert message["name"] == process_notification.name and message["task_id"] == "task-1"
    assert message["retries"] == process_notification.max_retries  # no retry spent, even the last one
    assert message["countdown"] == 4.0
    assert message["kwargs"]["notification_id"] == 7
    assert before <= message["kwargs"][RATE_LIMITED_SINCE] <= time.time()

    # The next run carries the first wait's time on.
    with running(process_notification, retries=2, **message["kwargs"]) as task:
        task_retry(task, rate_limited(4))
    assert published[1]["kwargs"] == message["kwargs"] and published[1]["retries"] == 2


def test_an_error_without_retry_after_spends_a_retry_and_the_last_one_gives_up(settings, published):
    from partner.inbox.tasks import process_notification

    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_JITTER = 2, False
    error = ServiceUnavailableError("server error", status=500)
    with running(process_notification, retries=1, notification_id=7) as task, pytest.raises(Retry):
        raise task_retry(task, error)
    [message] = published
    assert message["retries"] == 2 and message["countdown"] == 4 and message["kwargs"] == {"notification_id": 7}

    # Past the patience, a rate-limited error is spent the same way, up to giving up.
    settings.CELERY_TASK_RATE_LIMIT_PATIENCE = 60
    last = process_notification.max_retries
    kwargs = {"notification_id": 7, RATE_LIMITED_SINCE: time.time() - 61}
    with running(process_notification, retries=last, **kwargs) as task, pytest.raises(ServiceRateLimitError):
        task_retry(task, rate_limited(1))
    assert len(published) == 1


def test_a_task_called_directly_raises_the_error_itself():
    from partner.inbox.tasks import process_notification

    with pytest.raises(ServiceRateLimitError):
        task_retry(process_notification, rate_limited(1))


def test_the_project_has_one_backoff_formula():
    """The tasks, the transport's own retries and the sandbox's webhook deliveries wait by one formula
    (`backoff`): no other module of the application doubles a wait or draws a jitter of its own."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[2] / "partner"
    found = []
    for path in sorted(package.rglob("*.py")):
        if "migrations" in path.parts or path.name == "retries.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            doubling = (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Pow)
                and isinstance(node.left, ast.Constant)
                and node.left.value == 2
            )
            drawn = isinstance(node, ast.Attribute) and node.attr == "uniform"
            if doubling or drawn:
                found.append(f"{path.relative_to(package)}:{node.lineno}")
    assert found == []


def test_an_outage_publishes_the_task_again_uncounted_and_carries_its_start(settings, published):
    from partner.fulfillment.tasks import order_run

    settings.CELERY_TASK_RETRY_BACKOFF, settings.CELERY_TASK_RETRY_JITTER = 2, False
    before = time.time()
    with running(order_run, retries=order_run.max_retries, order_id=7) as task:
        outcome = task_retry(task, raised(cache_away))
    assert isinstance(outcome, Retry)
    [message] = published
    assert message["retries"] == order_run.max_retries  # no retry spent, even the last one
    assert before <= message["kwargs"][OUTAGE_SINCE] <= time.time()

    # The next run carries the outage's start on; once the outage is over, a counted error drops it.
    with running(order_run, retries=2, **message["kwargs"]) as task:
        task_retry(task, raised(cache_away))
    assert published[1]["kwargs"] == message["kwargs"] and published[1]["retries"] == 2
    with running(order_run, retries=2, **message["kwargs"]) as task, pytest.raises(Retry):
        raise task_retry(task, ServiceUnavailableError("server error", status=500))
    assert published[2]["kwargs"] == {"order_id": 7} and published[2]["retries"] == 3


def test_each_outbound_channel_gives_up_by_the_policy_declared_here(settings):
    """The platform channel's count budget and the connector's time budget, both read as they are now."""
    from datetime import UTC, datetime, timedelta

    from partner.core.retries import EVENT_SENDS, SERVICE_CALLS

    settings.CELERY_TASK_MAX_RETRIES = 5
    assert not SERVICE_CALLS.spent(4) and SERVICE_CALLS.spent(5)
    settings.CELERY_TASK_MAX_RETRIES = 2
    assert SERVICE_CALLS.spent(2)

    settings.CONNECTOR_RETRY_PATIENCE = 60
    since = datetime(2026, 1, 1, tzinfo=UTC)
    assert EVENT_SENDS.next_try(tries=1, failing_since=since, now=since) <= since + timedelta(seconds=60)
    assert EVENT_SENDS.next_try(tries=9, failing_since=since, now=since + timedelta(seconds=60)) is None
