"""A task goes through a real broker to a real worker and back: on Redis and on the default broker."""

import uuid

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker

from partner.core import tasks  # noqa: F401  (registers the task on every app)


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


def test_roundtrip_on_the_default_filesystem_broker(tmp_path):
    folder = str(tmp_path / "queue")
    (tmp_path / "queue").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "control").mkdir()
    options = {
        "data_folder_in": folder,
        "data_folder_out": folder,
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    roundtrip(make_app("filesystem://", f"file://{tmp_path / 'results'}", options))


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
