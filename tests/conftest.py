"""Shared fixtures of the test suite (the helpers they and the tests use are in `tests/helpers/`).

- `service`: the application on a live server, talking to its own sandbox over real HTTP;
  `demo`: the sandbox's demo data there, our partner accounts and the products pulled, with the
  URN words of `urn_words` (the spec's unless a test asks for others).
- `service_calls`: every exchange with the service (and with its token endpoint), from any thread.
- `fake_platform`: the service's client replaced by a recording fake (`tests/helpers/fakes.py`), for
  fast tests of the pipeline's rules; `tests/helpers/products.py` and `orders.py` give it an order to work.
- `tasks_sent`: the Celery tasks published by name, recorded instead of sent.

A test runs inside a transaction rolled back at its end (`django_db`) unless it needs real commits:
pytest-django gives every test using `live_server` (so `service`, `demo`, `celery_worker_live`)
real commits by itself; `django_db(transaction=True)` marks the others that need them (a thread or
process reading the database, `on_commit` callbacks that must run).
"""

import threading

import pytest

from tests.helpers.browser import browser, host, page, shot, signed_in  # noqa: F401  (the browser fixtures, shared by every browser test)
from tests.helpers.ports import port_answers
from tests.helpers.products import DEMO_PASSWORD, WRONG_ACCOUNT_PASSWORD
from tests.helpers.service_calls import ServiceCalls


def pytest_configure(config):
    """The run's folder (its SQLite database, broker, cache and documents: config/settings/test.py),
    and its id in the environment, which the worker processes that tests start inherit: they then use
    the run's database, queue and cache, not ones of their own."""
    import os

    from django.conf import settings

    settings.RUN_DIR.mkdir(parents=True, exist_ok=True)
    os.environ["TEST_RUN_ID"] = settings.RUN_ID


# The tests that do not share the machine with one another: under pytest-xdist (`make test`, with
# --dist loadgroup) they run one after another on one worker. The image test builds and runs a
# whole stack; the drills stop and start servers of their own and watch what waits meanwhile.
SERIAL_GROUP = "serial"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark what a marker cannot say from one module: the drills (tests/drills/) as `drill`; the
    tests that use a live server (the `service` fixture and those built on it) as `live`, and those
    with an embedded worker (`celery_worker_live`) as `worker`; and the drills and the image test in
    the serial group."""
    for item in items:
        path = item.path.as_posix()
        if "/tests/drills/" in path:
            item.add_marker(pytest.mark.drill)
        fixtures = getattr(item, "fixturenames", ())
        if "live_server" in fixtures:
            item.add_marker(pytest.mark.live)
        if "celery_worker_live" in fixtures:
            item.add_marker(pytest.mark.worker)
        if item.get_closest_marker("drill") or item.get_closest_marker("image"):
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    """Before pytest-xdist starts its workers, which inherit this process's environment: the metrics
    folder that Django's start named there (partner/core/apps.py) is this process's run's, so each
    worker counts in its own run's folder instead of all in one (a test then saw another's counts)."""
    import os

    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)


@pytest.fixture(scope="session")
def django_db_modify_db_settings_xdist_suffix():
    """pytest-django's suffix for pytest-xdist's workers, not added: the test settings name each
    worker's database (and queue, cache keys and folders) after its run id, which says the worker."""


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
    """After each test, close our client's and the sandbox sender's kept-alive connections, and end
    the sandbox's sender threads with their database connections.

    Each holds a live-server thread, and with it a database connection, open; PostgreSQL
    would then refuse to drop the test database at the end of the run.
    """
    yield
    from partner.platform.http import sessions_close
    from partner.sandbox import webhooks

    sessions_close()
    webhooks.sessions_close()
    webhooks.senders_stop()


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
def _catalog_cache_dropped():
    """No test sees the cached catalog of another, or of an earlier run sharing the cache (a test's
    rows are rolled back without a signal)."""
    from django.core.cache import cache

    from partner.catalog.product_cache import CATALOG_CACHE_KEYS

    cache.delete_many(CATALOG_CACHE_KEYS)
    yield
    cache.delete_many(CATALOG_CACHE_KEYS)


@pytest.fixture(autouse=True)
def _no_lease_renewal_inside_the_test_transaction(request):
    """A test inside one rolled-back transaction (`django_db` without `transaction=True`) holds its
    rows where no other connection sees them, the lease-renewal thread's included: a renewal would
    find no row and mark the lease lost, stopping the run at its next call. Renewals come every third
    of LEASE_SECONDS, so a run slower than 5 s (a busy machine) failed. Such a test gets a lease no
    run outlives; the tests about renewal set LEASE_SECONDS themselves, and the tests with real
    commits and the worker processes keep the settings' 15 s."""
    marker = request.node.get_closest_marker("django_db")
    fixtures = request.fixturenames
    marked = marker is not None and not (marker.kwargs.get("transaction") or (marker.args and marker.args[0]))
    in_transaction = (marked or "db" in fixtures) and not {"transactional_db", "live_server"} & set(fixtures)
    if in_transaction:
        request.getfixturevalue("settings").LEASE_SECONDS = 3600
    yield


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
            app,
            pool=app.conf.worker_pool,  # production's model (CELERY_WORKER_POOL, threads)
            concurrency=4,
            perform_ping_check=False,
            loglevel="WARNING",
            shutdown_timeout=30,
        ) as worker:
            yield worker
    finally:
        task_postrun.disconnect(close_thread_connections)


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


@pytest.fixture
def broker_down(settings):
    """Point the Celery app at a broker nobody answers on; `broker_down()` (the fixture value) restores it."""
    from tests.helpers.workers import broker_point

    broker_point("redis://127.0.0.1:1/0")
    restore = lambda: broker_point(settings.CELERY_BROKER_URL)  # noqa: E731
    yield restore
    restore()


@pytest.fixture
def urn_words(request, settings):
    """The words of the service's URNs for this test (SVC_URN_PREFIX, SVC_URN_PLATFORM, SVC_URN_HOST):
    the spec's, unless the test is parametrized with others (`tests/helpers/urn_words.py`). The
    application and its sandbox read the same settings, as a deployment and its platform agree."""
    words = request.param if hasattr(request, "param") else {}
    for name, value in words.items():
        setattr(settings, name, value)
    return words


@pytest.fixture
def demo(service, urn_words):
    """The sandbox's demo data on the live server, our partner accounts for its lenders, and its
    products pulled into our catalog (so an order costs only the order's own calls), with the URNs of
    `urn_words`."""
    from partner.catalog.services import partner_account_set, products_pull
    from partner.sandbox.faults import faults_clear
    from partner.sandbox.seeding import sandbox_seed
    from partner.sandbox.webhooks import webhook_deliveries_wait

    seed = sandbox_seed(public_base_url=service.url)
    partner_account_set(username="lender.demo", password=DEMO_PASSWORD, company="DEMO01")
    partner_account_set(username="lender.wrong", password=WRONG_ACCOUNT_PASSWORD, company="DEMO01")
    products_pull()
    yield seed
    faults_clear()
    webhook_deliveries_wait(timeout=10)


@pytest.fixture
def service_calls():
    """The calls to the service (and the token requests) made while the test runs, in any thread."""
    from partner.platform.signals import service_call_finished, token_requested

    seen = ServiceCalls()
    lock = threading.Lock()

    def on_call(sender, **kwargs):
        with lock:
            seen.append(kwargs)

    def on_token(sender, **kwargs):
        with lock:
            seen.tokens.append(kwargs)

    service_call_finished.connect(on_call, weak=False)
    token_requested.connect(on_token, weak=False)
    yield seen
    service_call_finished.disconnect(on_call)
    token_requested.disconnect(on_token)


@pytest.fixture
def fake_platform(monkeypatch):
    """The service's client replaced by a fake that records every call (`tests/helpers/fakes.py`)."""
    from tests.helpers.fakes import FakePlatform

    return FakePlatform().install(monkeypatch)


@pytest.fixture
def tasks_sent(monkeypatch):
    """Tasks published through Celery, as (name, kwargs), recorded instead of handed to the broker."""
    from config.celery import app

    sent = []

    def send_task(name, args=None, kwargs=None, **options):
        sent.append((name, kwargs))

    monkeypatch.setattr(app, "send_task", send_task)
    return sent


@pytest.fixture
def ratelimit_clock(monkeypatch):
    """The clock of django-ratelimit's windows held at the test's start, for a test that counts
    requests up to a limit: its windows are fixed, and one that ended between the test's requests
    would start the count again (the request meant to be refused goes through). The live server's
    threads read the same clock."""
    import time
    from types import SimpleNamespace

    import django_ratelimit.core

    now = time.time()
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: now))


@pytest.fixture
def staff(client, django_user_model):
    """The test client signed in to the admin as a superuser."""
    user = django_user_model.objects.create_superuser("staff", "staff@partner.example", "staff-password-1")
    client.force_login(user)
    return client
