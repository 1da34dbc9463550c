"""A task goes through a real broker to a real worker and back: on Redis and on the local SQLite broker."""

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker

from partner.core import tasks  # noqa: F401  (registers the task on every app)
from partner.core.brokers import sqlite_broker_options, sqlite_broker_prepare, sqlite_broker_url

ROOT = Path(__file__).resolve().parents[2]


def make_app(broker_url, backend_url, transport_options=None):
    app = Celery("roundtrip", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    # The read and write URLs too: CELERY_BROKER_URL in the environment would win over broker_url.
    app.conf.update(
        broker_url=broker_url,
        broker_read_url=broker_url,
        broker_write_url=broker_url,
        result_backend=backend_url,
        broker_transport_options=transport_options or {},
    )
    app.autodiscover_tasks(["partner.core"], force=True)
    return app


@pytest.fixture(autouse=True)
def _project_app_current_again():
    """An embedded worker makes its app the current one, and `shared_task`s publish through the
    current app: give that role back to the project's app, whose pools are still open."""
    yield
    from config.celery import app

    app.set_current()
    app.set_default()


def roundtrip(app):
    token = uuid.uuid4().hex
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        answer = app.send_task("core.worker_ping", args=[token]).get(timeout=30)
    assert answer["token"] == token
    assert answer["worker"]


def test_roundtrip_on_redis(redis_url):
    roundtrip(make_app(redis_url, redis_url))


def test_roundtrip_on_the_local_sqlite_broker(tmp_path):
    broker = tmp_path / "broker.sqlite3"
    roundtrip(
        make_app(
            sqlite_broker_url(broker),
            f"db+sqlite:///{tmp_path / 'results.sqlite3'}",
            sqlite_broker_options(broker),
        )
    )


@pytest.mark.worker
def test_a_worker_process_on_the_local_sqlite_broker_answers(tmp_path, settings, monkeypatch):
    """`celery -A config worker`, prefork with two children as in the Procfile, on the SQLite broker
    and result backend the settings make of the URLs: a task published here is run there and its
    result read back here."""
    broker = tmp_path / "broker.sqlite3"
    broker_url, results_url = sqlite_broker_url(broker), f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "CELERY_BROKER_URL": broker_url,
        "CELERY_RESULT_BACKEND": results_url,
        "INBOX_RELAY_INTERVAL": "0",  # the relay reads the application's database: not this test's
    }
    # Celery reads the result backend from the environment before its configuration (make test exports
    # Redis's): this process must read results where the worker writes them.
    monkeypatch.setenv("CELERY_RESULT_BACKEND", results_url)
    options = sqlite_broker_options(broker)
    # What the settings of every process do first: the file, its tables and the queue, made once.
    sqlite_broker_prepare(broker_url, options, queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    log = tmp_path / "worker.log"
    argv = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork", "--concurrency=2", "-l", "INFO"]
    with log.open("wb") as out:
        worker = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        app = make_app(broker_url, results_url, options)
        tokens = [uuid.uuid4().hex for _ in range(4)]
        pending = [app.send_task("core.worker_ping", args=[token]) for token in tokens]
        answers = [result.get(timeout=60) for result in pending]
    finally:
        # SIGTERM to the main process alone, as a warm shutdown: children signalled too can die
        # holding the pool's queue lock, and the main process then never exits.
        os.kill(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
    assert [answer["token"] for answer in answers] == tokens, log.read_text()[-3000:]
    assert "Unrecoverable error" not in log.read_text()


def test_a_worker_keeps_its_database_connection_between_tasks(redis_url, db):
    """Celery's Django fix-up would open a new connection for every task (CELERY_DB_REUSE_MAX)."""
    app = make_app(redis_url, redis_url)

    @app.task(name="tests.connection_identity", ignore_result=False)
    def connection_identity():
        from django.db import connection

        connection.ensure_connection()
        return id(connection.connection)

    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        first = app.send_task("tests.connection_identity").get(timeout=30)
        second = app.send_task("tests.connection_identity").get(timeout=30)
    assert first == second
