"""Shared fixtures of the test suite."""

import socket

import pytest


def port_answers(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture
def redis_url():
    if not port_answers(6379):
        pytest.skip("Redis does not answer on 127.0.0.1:6379")
    return "redis://127.0.0.1:6379/13"


@pytest.fixture
def service(live_server, settings):
    """The application on a live server, talking to its own sandbox over real HTTP.

    Points every service setting at the live server's sandbox and clears the
    cache (so no access token of an earlier test is reused).
    """
    from types import SimpleNamespace

    from django.core.cache import cache

    base = live_server.url
    settings.PUBLIC_BASE_URL = base
    settings.SVC_BASE_URL = f"{base}/sandbox"
    settings.SVC_TOKEN_URL = f"{base}/sandbox/oauth2/v1/token"
    settings.HOST_ORIGINS = [base]
    cache.clear()
    yield SimpleNamespace(url=base, base_url=settings.SVC_BASE_URL, token_url=settings.SVC_TOKEN_URL)
    cache.clear()


@pytest.fixture(autouse=True)
def _kept_alive_connections_closed():
    """After each test, close our client's and the sandbox sender's kept-alive connections.

    Each holds a live-server thread, and with it a database connection, open; PostgreSQL
    would then refuse to drop the test database at the end of the run.
    """
    yield
    from partner.platform.http import sessions_close
    from partner.sandbox import webhooks

    sessions_close()
    webhooks.sessions_close()


@pytest.fixture(scope="session", autouse=True)
def _test_database_released(django_db_setup, django_db_blocker):
    """Before the test database is dropped, end the sessions that threads of the run left open
    (live-server and embedded-worker threads): PostgreSQL refuses to drop a database in use."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


@pytest.fixture(autouse=True)
def _runtime_secrets_forgotten():
    """A value one test registered as secret (a fuzzed token, say) must not mask another test's text."""
    yield
    from partner.core.logging import secrets_registered_clear

    secrets_registered_clear()


@pytest.fixture
def celery_worker_live(service):
    """A real Celery worker on the configured broker (Redis on CI), in this process.

    Tasks run in worker threads against the same test database the live
    server uses. Messages left by an earlier run are purged first.
    """
    from celery.contrib.testing.worker import start_worker
    from celery.signals import task_postrun
    from django.db import connections

    from config.celery import app

    def close_thread_connections(**kwargs):
        # A worker thread's connection would outlive the test and keep PostgreSQL from
        # dropping the test database at the end of the run.
        connections.close_all()

    task_postrun.connect(close_thread_connections, weak=False)
    app.control.purge()
    try:
        with start_worker(
            app, pool="threads", concurrency=4, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30
        ) as worker:
            yield worker
    finally:
        task_postrun.disconnect(close_thread_connections)


def wait_for(predicate, *, timeout=60.0, interval=0.2, message="condition"):
    """Poll `predicate` until it returns something truthy; fail the test after `timeout` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:g}s waiting for {message() if callable(message) else message}")


@pytest.fixture
def signed_post(client, settings):
    """POST a body to /v1/webhooks signed with the first accepted secret (or `secret=`)."""
    from partner.platform.signatures import signature_compute

    def post(body: bytes, *, secret=None, signature=None, **headers):
        secret = secret or settings.SVC_SIGNING_SECRETS[0]
        if signature is None:
            signature = signature_compute(body, secret)
        header = "HTTP_" + settings.SVC_SIGNATURE_HEADER.upper().replace("-", "_")
        extra = {header: signature} if signature != "" else {}
        return client.post("/v1/webhooks", data=body, content_type="application/json", **extra, **headers)

    return post


def broker_point(url):
    """Point the Celery app at `url`, dropping every pooled connection to the old broker."""
    from kombu import pools

    from config.celery import app

    # Publishing uses the write URL; CELERY_BROKER_URL in the environment would win over broker_url.
    app.conf.broker_write_url = url
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    pools.reset()


@pytest.fixture
def broker_down(settings):
    """Point the Celery app at a broker nobody answers on; `broker_down()` (the fixture value) restores it."""
    broker_point("redis://127.0.0.1:1/0")
    restore = lambda: broker_point(settings.CELERY_BROKER_URL)  # noqa: E731
    yield restore
    restore()
