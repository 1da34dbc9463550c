"""/healthz/live and /healthz/ready for load balancers and orchestrators; GET and HEAD on every probe."""

import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from partner.inbox.health import RELAY_ROUND_KEY, relay_round_record
from partner.inbox.models import Notification, NotificationState

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_relay_round_yet():
    cache.delete(RELAY_ROUND_KEY)
    yield
    cache.delete(RELAY_ROUND_KEY)


def test_live_answers_without_the_database(monkeypatch):
    from django.db.backends.base.base import BaseDatabaseWrapper

    def refuse(*args, **kwargs):
        raise AssertionError("/healthz/live must not touch the database")

    monkeypatch.setattr(BaseDatabaseWrapper, "cursor", refuse)
    response = Client().get("/healthz/live")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.parametrize("path", ["/healthz", "/healthz/live", "/healthz/ready", "/metrics"])
def test_every_probe_answers_head_and_is_never_cached(path, settings):
    settings.METRICS_PUBLIC = True
    response = Client().head(path)
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]
    assert Client().post(path).status_code == 405


def test_ready_is_ok_with_a_relay_at_work_and_no_backlog():
    relay_round_record()
    response = Client().get("/healthz/ready")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "ok"}


def test_ready_is_degraded_when_no_relay_has_run_and_healthz_stays_as_it_was(settings):
    body = Client().get("/healthz/ready").json()
    assert body["status"] == "degraded"
    assert body["warnings"] == ["inbox relay: no round seen yet (is a worker running?)"]
    cache.set(RELAY_ROUND_KEY, time.time() - 120, timeout=None)
    assert "no round for 120 s" in Client().get("/healthz/ready").json()["warnings"][0]
    assert Client().get("/healthz").json() == {"status": "ok", "database": "ok", "broker": "ok"}
    settings.INBOX_RELAY_STALE_SECONDS = 0
    assert Client().get("/healthz/ready").json()["status"] == "ok"


def test_ready_is_degraded_by_a_backlog_past_its_thresholds(settings):
    relay_round_record()
    settings.INBOX_BACKLOG_WARN_ROWS = 2
    settings.INBOX_BACKLOG_WARN_SECONDS = 60
    for n in range(3):
        Notification.objects.create(
            dedupe_key=f"b{n}", resource_type="x", resource_id=str(n), event_type="created", body="{}",
            state=NotificationState.RECEIVED,
        )  # fmt: skip
    Notification.objects.filter(dedupe_key="b0").update(received_at=timezone.now() - timedelta(minutes=5))
    response = Client().get("/healthz/ready")
    assert response.status_code == 200  # degraded still serves: a balancer keeps the instance
    rows, waited = response.json()["warnings"]
    assert rows == "inbox backlog: 3 notifications not yet processed"
    assert waited.startswith("inbox backlog: the oldest notification has waited 30")  # 300 s and a moment


def test_the_relay_loop_records_its_rounds(settings):
    from partner.inbox.relay import relay_chore
    from tests.helpers.housekeeping import housekeeping_running

    with housekeeping_running([relay_chore(interval=0.05)]):
        deadline = time.monotonic() + 10
        while cache.get(RELAY_ROUND_KEY) is None and time.monotonic() < deadline:
            time.sleep(0.05)
    assert cache.get(RELAY_ROUND_KEY) is not None
