"""A task goes through a real broker to a real worker and back: on Redis and on the default broker."""

import uuid

from celery import Celery
from celery.contrib.testing.worker import start_worker

from partner.core import tasks  # noqa: F401  (registers the task on every app)


def make_app(broker_url, backend_url, transport_options=None):
    app = Celery("roundtrip", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.update(broker_url=broker_url, result_backend=backend_url, broker_transport_options=transport_options or {})
    app.autodiscover_tasks(["partner.core"], force=True)
    return app


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
