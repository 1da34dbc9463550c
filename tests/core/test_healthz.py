"""GET /healthz: 200 with database and broker up, 503 naming what is down, never a secret."""

import json

from django.test import Client

from tests.helpers.processes import PRODUCTION, run_django


def test_healthz_up(db):
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


# In production the details (what is down) are for the metrics token and staff (test_probe_details.py).
METRICS_TOKEN = "metrics-token-Hk3vW8qZ2pLx"
HEALTHZ_IN_SUBPROCESS = (
    "import django, json; django.setup(); from django.test import Client; "
    "r = Client().get('/healthz', HTTP_HOST='partner.example.com', secure=True, "
    f"HTTP_AUTHORIZATION='Bearer {METRICS_TOKEN}'); "
    "print(r.status_code); print(r.content.decode())"
)


def test_healthz_names_what_is_down_without_secrets():
    result = run_django(
        {
            **PRODUCTION,
            "METRICS_TOKEN": METRICS_TOKEN,
            "DATABASE_URL": "postgres://partner:db-password-123@127.0.0.1:1/partner",
            "CELERY_BROKER_URL": "redis://:broker-password-456@127.0.0.1:1/0",
        },
        HEALTHZ_IN_SUBPROCESS,
    )
    status, body = result.stdout.strip().splitlines()[-2:]
    assert status == "503"
    report = json.loads(body)
    assert report["status"] == "down"
    assert set(report["down"]) == {"database", "broker"}
    assert "db-password-123" not in result.stdout + result.stderr
    assert "broker-password-456" not in result.stdout + result.stderr


def test_healthz_broker_down_only(tmp_path):
    result = run_django(
        {
            **PRODUCTION,
            "METRICS_TOKEN": METRICS_TOKEN,
            "DATABASE_URL": f"sqlite:///{tmp_path}/h.sqlite3",
            "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
        },
        HEALTHZ_IN_SUBPROCESS,
    )
    status, body = result.stdout.strip().splitlines()[-2:]
    assert status == "503"
    assert json.loads(body)["down"] == ["broker"]


def test_the_broker_check_on_rabbitmq_matches_the_queue_celery_declares(settings):
    """On RabbitMQ the check declared the task queue non-durable: refused (406) once Celery had
    declared it durable, so /healthz said "broker down" for ever, and the other way round the
    workers could not start."""
    import pytest
    from kombu import Connection, Exchange, Queue

    from partner.core.health import broker_check
    from tests.helpers.ports import port_answers
    from tests.helpers.workers import broker_point

    if not port_answers(5672):
        pytest.skip("RabbitMQ does not answer on 127.0.0.1:5672")
    from config.celery import app

    url = "amqp://guest:guest@127.0.0.1:5672//"
    name = f"{app.conf.task_default_queue}-health"
    previous = (app.conf.broker_write_url, app.conf.task_default_queue)
    with Connection(url) as conn:
        Queue(name, Exchange(name), name, durable=True)(conn.default_channel).declare()  # as Celery does
    try:
        app.conf.task_default_queue = name
        broker_point(url)
        assert broker_check() is True
    finally:
        app.conf.task_default_queue = previous[1]
        broker_point(previous[0])
        with Connection(url) as conn:
            conn.default_channel.queue_delete(name)


LOCAL_HEALTHZ_IN_SUBPROCESS = (
    "import django, json; django.setup(); from django.test import Client; "
    "r = Client().get('/healthz', HTTP_HOST='127.0.0.1'); print(r.status_code); print(r.content.decode())"
)


def test_healthz_reports_the_local_sqlite_broker(tmp_path):
    """A local run's broker (kombu's SQLAlchemy transport on SQLite): up, then down when its file
    cannot be opened (the transport itself would "connect" to anything without touching it)."""
    env = {
        "DJANGO_DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path}/h.sqlite3",
        "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path}/broker.sqlite3",
    }
    result = run_django(env, LOCAL_HEALTHZ_IN_SUBPROCESS)
    status, body = result.stdout.strip().splitlines()[-2:]
    assert status == "200", result.stderr
    assert json.loads(body)["broker"] == "ok"

    (tmp_path / "a-file").write_text("")
    result = run_django(
        {**env, "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path}/a-file/broker.sqlite3"}, LOCAL_HEALTHZ_IN_SUBPROCESS
    )
    status, body = result.stdout.strip().splitlines()[-2:]
    assert status == "503", result.stderr
    assert json.loads(body)["down"] == ["broker"]
