"""Probes in production answer with their status only; what is down, the warnings (which name
products and the state of their secrets) and the API schema are for staff and the metrics token.
Field encryption keys that cannot decrypt make readiness 503: every webhook would answer 500."""

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-Hk3vW8qZ2pLx"


@pytest.fixture
def production_probes(settings):
    settings.METRICS_PUBLIC = False
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []


def test_anyone_gets_the_status_alone(production_probes, settings):
    settings.INBOX_RELAY_STALE_SECONDS = 1  # no relay runs here: a warning
    for path in ("/healthz", "/healthz/ready"):
        response = Client().get(path)
        assert response.status_code == 200
        assert set(response.json()) == {"status"}, path
    assert Client().get("/healthz/ready").json() == {"status": "degraded"}


def test_the_metrics_token_and_staff_get_the_details(production_probes, settings):
    settings.INBOX_RELAY_STALE_SECONDS = 1
    body = Client().get("/healthz/ready", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert body["database"] == "ok" and body["warnings"]
    staff = get_user_model().objects.create_user("ops", password="ops-password-1", is_staff=True)
    client = Client()
    client.force_login(staff)
    assert client.get("/healthz").json()["database"] == "ok"


def test_the_api_schema_follows_the_metrics_rule(production_probes):
    assert Client().get("/api/schema/").status_code == 401
    assert Client().get("/api/schema/", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    response = Client().get("/api/schema/", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert b"openapi" in response.content


def test_malformed_encryption_keys_make_readiness_503(production_probes, settings):
    settings.FIELD_ENCRYPTION_KEYS = ["not-a-fernet-key"]
    for path in ("/healthz", "/healthz/ready"):
        response = Client().get(path)
        assert response.status_code == 503
        assert response.json() == {"status": "down"}
    detailed = Client().get("/healthz/ready", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert detailed["down"] == ["encryption keys"]
    assert "not-a-fernet-key" not in str(detailed)
