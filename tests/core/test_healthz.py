"""GET /healthz: 200 with database and broker up, 503 naming what is down, never a secret."""

import json

from django.test import Client

from tests.core.test_settings import PRODUCTION, run_django


def test_healthz_up(db):
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


HEALTHZ_IN_SUBPROCESS = (
    "import django, json; django.setup(); from django.test import Client; "
    "r = Client().get('/healthz', HTTP_HOST='partner.example.com', secure=True); "
    "print(r.status_code); print(r.content.decode())"
)


def test_healthz_names_what_is_down_without_secrets():
    result = run_django(
        {
            **PRODUCTION,
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
        {**PRODUCTION, "DATABASE_URL": f"sqlite:///{tmp_path}/h.sqlite3", "CELERY_BROKER_URL": "redis://127.0.0.1:1/0"},
        HEALTHZ_IN_SUBPROCESS,
    )
    status, body = result.stdout.strip().splitlines()[-2:]
    assert status == "503"
    assert json.loads(body)["down"] == ["broker"]
