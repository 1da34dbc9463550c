"""GET /metrics: Prometheus figures after a real order, parsed with the client library's own parser.

The order runs over real HTTP (the sandbox of a live server) with a real worker process, whose
figures reach the web's scrape through the multiprocess directory they share.
"""

import pytest
from prometheus_client.parser import text_string_to_metric_families

from partner.fulfillment.models import Order, OrderStatus
from partner.inbox.models import Notification, NotificationState
from partner.platform.metrics import endpoint_name
from partner.sandbox.transactions import transaction_create
from tests.helpers.waiting import wait_for
from tests.helpers.workers import worker_kill, worker_start


def samples(text: str) -> dict:
    """{(sample name, sorted labels): value} of an exposition."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(parsed: dict, name: str, **labels) -> float:
    return parsed.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def metrics_open(settings):
    settings.METRICS_PUBLIC = True


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_order_shows_in_the_metrics(demo, service, client, metrics_open, tmp_path):
    from config.celery import app

    app.control.purge()
    before = samples(client.get("/metrics").content.decode())
    log = tmp_path / "worker.log"
    worker = worker_start(service, log)
    try:
        txn = transaction_create(
            product=demo.products["address-verification"], user=demo.users["lender.demo"], loan=demo.loans[2]
        )
        wait_for(
            lambda: Order.objects.filter(transaction_id=txn.id, status=OrderStatus.REQUEST_COMPLETED).exists(),
            timeout=90,
            message=lambda: f"completion; worker log:\n{log.read_text()[-3000:]}",
        )
    finally:
        worker_kill(worker)

    response = client.get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    after = samples(response.content.decode())

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    # The "created" webhook and the "processed" callback, answered 202 by the web process.
    assert grew("partner_webhooks_received_total", status="202") == 2
    # The worker's calls, one per step of the minimum sequence, and our token.
    for endpoint in ("transaction", "resources", "upload", "response", "event"):
        assert grew("partner_service_calls_total", endpoint=endpoint, status="200") >= 1, endpoint
    assert grew("partner_service_call_duration_seconds_count", endpoint="response") >= 1
    assert value(after, "partner_token_requests_total", status="200") >= 1  # this run's token (maybe the seeding's)
    product = "address-verification"
    assert grew("partner_orders_finished_total", product=product, outcome="completed") == 1
    assert grew("partner_order_turnaround_seconds_count", product=product, stage="delivered") == 1
    assert grew("partner_order_turnaround_seconds_count", product=product, stage="completed") == 1
    # Read when scraped: nothing open, nothing waiting.
    assert value(after, "partner_inbox_backlog", state="received") == 0
    assert not [key for key in after if key[0] == "partner_orders_open"]
    assert value(after, "partner_orders_awaiting_confirmation") == 0
    for queue in (app.conf.task_default_queue, f"{app.conf.task_default_queue}.events"):
        assert ("partner_broker_messages_waiting", (("queue", queue),)) in after


@pytest.mark.django_db
def test_the_backlog_and_open_orders_are_read_when_scraped(client, metrics_open, settings):
    from datetime import timedelta

    from django.utils import timezone

    old = timezone.now() - timedelta(seconds=90)
    for n, state in enumerate([NotificationState.RECEIVED, NotificationState.RECEIVED, NotificationState.QUEUED]):
        Notification.objects.create(
            dedupe_key=f"k{n}", resource_type="x", resource_id=str(n), event_type="created", body="{}", state=state
        )
    Notification.objects.filter(dedupe_key="k0").update(received_at=old)
    Order.objects.create(transaction_id="t1", product_name="appraisal", status=OrderStatus.IN_PROGRESS)
    Order.objects.create(transaction_id="t2", product_name="appraisal", status=OrderStatus.REQUEST_COMPLETED)
    settings.CONFIRMATION_WAIT_SECONDS = 60
    Order.objects.create(
        transaction_id="t3", product_name="appraisal", status=OrderStatus.RESPONSE_DELIVERED, delivered_at=old
    )

    parsed = samples(client.get("/metrics").content.decode())

    assert value(parsed, "partner_inbox_backlog", state="received") == 2
    assert value(parsed, "partner_inbox_backlog", state="queued") == 1
    assert 89 <= value(parsed, "partner_inbox_oldest_backlog_age_seconds") < 120
    assert 89 <= value(parsed, "partner_inbox_relay_lag_seconds") < 120
    assert value(parsed, "partner_orders_open", status="IN_PROGRESS", product="appraisal") == 1
    assert value(parsed, "partner_orders_open", status="RESPONSE_DELIVERED", product="appraisal") == 1
    assert value(parsed, "partner_orders_open", status="REQUEST_COMPLETED", product="appraisal") == 0
    assert value(parsed, "partner_orders_awaiting_confirmation") == 1


@pytest.mark.django_db
def test_each_webhook_answer_is_counted_by_status(client, metrics_open, signed_post):
    before = samples(client.get("/metrics").content.decode())
    signed_post(b"{}", signature="bm90IGEgc2lnbmF0dXJl")
    signed_post(b"[1]")
    after = samples(client.get("/metrics").content.decode())
    for status in ("401", "400"):
        grown = value(after, "partner_webhooks_received_total", status=status)
        assert grown - value(before, "partner_webhooks_received_total", status=status) == 1


@pytest.mark.django_db
def test_metrics_are_closed_in_production_unless_a_token_or_network_opens_them(client, settings):
    settings.METRICS_PUBLIC = False
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = []
    assert client.get("/metrics").status_code == 403

    settings.METRICS_TOKEN = "scrape-token-2026"
    refused = client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong")
    assert refused.status_code == 401 and refused["WWW-Authenticate"].startswith("Bearer")
    assert b"partner_" not in refused.content
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token-2026").status_code == 200

    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.7").status_code == 401


@pytest.mark.django_db
def test_head_and_get_only(client, metrics_open):
    assert client.head("/metrics").status_code == 200
    assert client.post("/metrics").status_code == 405


@pytest.mark.parametrize(
    "method, path, name",
    [
        ("GET", "partner/v2/origins/o-1", "origin"),
        ("GET", "partner/v2/transactions/t-1", "transaction"),
        ("PATCH", "partner/v2/transactions/t-1/response", "response"),
        ("POST", "partner/v2/transactions/t-1/response/resources", "resources"),
        ("GET", "partner/v2/transactions/t-1/events/e-9", "event"),
        ("GET", "partner/v2/transactions?start=0&limit=50", "transactions"),
        ("GET", "partner/v2/products", "products"),
        ("PATCH", "partner/v2/products/p-1", "product"),
        ("DELETE", "partner/v2/products/p-1", "other"),
    ],
)
def test_calls_are_named_by_the_specs_endpoint_never_by_their_ids(settings, method, path, name):
    settings.SVC_BASE_URL = "https://svc.example/api"
    assert endpoint_name(method, f"https://svc.example/api/{path}") == name
    assert endpoint_name("PUT", "https://uploads.example/bucket/r-1?sig=x") == "upload"
    assert endpoint_name("PUT", "https://svc.example/api/uploads/r-1") == "upload"
