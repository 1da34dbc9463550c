"""Webhooks of the sandbox: body per the spec, signed over the exact bytes sent,
sent after commit, retried with backoff (bounded), every attempt recorded."""

import json
import socket

from django.conf import settings as django_settings
from django.db import transaction as db_transaction

from partner.platform import formats, urns
from partner.platform.signatures import signature_compute, signature_verify
from partner.sandbox import webhooks
from partner.sandbox.faults import fault_set
from partner.sandbox.models import WebhookAttempt, WebhookDelivery
from partner.sandbox.products import product_signing_secret_set, product_webhooks_point
from partner.sandbox.transactions import transaction_create
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.sandbox import host_transaction

HEADER = "Svc-Signature"


def _notification(call):
    return json.loads(call.body)


def test_new_transaction_sends_a_signed_created_webhook(api, sandbox):
    transaction_id = host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    (call,) = sandbox.receiver.calls
    assert call.headers["Content-Type"] == "application/json"
    body = _notification(call)
    assert body["eventType"] == formats.WEBHOOK_EVENT_CREATED
    assert body["eventTime"].endswith("Z")
    assert body["eventId"]
    assert body["meta"] == {
        "resourceType": urns.transaction_resource_type(),
        "resourceId": transaction_id,
        "instanceId": "address-verification",
        "resourceRef": f"{sandbox.base}/partner/v2/transactions/{transaction_id}",
    }
    # Signed with the demo product's secret (first of SVC_SIGNING_SECRETS) over the exact bytes.
    signature = call.headers[django_settings.SVC_SIGNATURE_HEADER]
    assert signature == signature_compute(call.body, django_settings.SVC_SIGNING_SECRETS[0])
    assert signature_verify(call.body, signature, django_settings.SVC_SIGNING_SECRETS)
    reserialised = json.dumps(body, separators=(",", ":")).encode()
    assert reserialised != call.body
    assert not signature_verify(reserialised, signature, django_settings.SVC_SIGNING_SECRETS)
    # The resourceRef is readable with the bearer token.
    assert api.get(body["meta"]["resourceRef"], timeout=10).json()["id"] == transaction_id
    delivery = WebhookDelivery.objects.get()
    assert bytes(delivery.body) == call.body
    assert delivery.status == WebhookDelivery.Status.DELIVERED
    assert delivery.event_id == body["eventId"]
    assert list(delivery.attempts.values_list("number", "status_code")) == [(1, 202)]


def test_processed_response_sends_the_event_webhook(api, sandbox):
    transaction_id = host_transaction(sandbox)
    api.patch(
        api.url(f"/partner/v2/transactions/{transaction_id}/response"), json={"status": "completed"}, timeout=10
    ).raise_for_status()
    assert webhook_deliveries_wait(10)
    assert len(sandbox.receiver.calls) == 2
    event_call = sandbox.receiver.calls[1]
    meta = _notification(event_call)["meta"]
    assert meta["resourceType"] == urns.event_resource_type()
    assert meta["instanceId"] == "address-verification"
    assert meta["resourceRef"] == f"{sandbox.base}/partner/v2/transactions/{transaction_id}/events/{meta['resourceId']}"
    event = api.get(meta["resourceRef"], timeout=10).json()
    assert event["type"] == urns.response_processed_event_type()
    assert signature_verify(event_call.body, event_call.headers[HEADER], django_settings.SVC_SIGNING_SECRETS)


def test_the_products_own_secret_signs(sandbox):
    product_signing_secret_set(product="address-verification", secret="a-product-own-secret")
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    (call,) = sandbox.receiver.calls
    assert signature_verify(call.body, call.headers[HEADER], ["a-product-own-secret"])
    assert not signature_verify(call.body, call.headers[HEADER], django_settings.SVC_SIGNING_SECRETS)


def test_failed_deliveries_are_retried_with_the_same_bytes(sandbox):
    sandbox.receiver.statuses = [500, 503]
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    calls = sandbox.receiver.calls
    assert len(calls) == 3
    assert len({call.body for call in calls}) == 1
    assert len({call.headers[HEADER] for call in calls}) == 1
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == WebhookDelivery.Status.DELIVERED
    assert delivery.attempt_count == 3
    assert list(delivery.attempts.values_list("number", "status_code")) == [(1, 500), (2, 503), (3, 202)]


def test_retries_are_bounded(sandbox):
    sandbox.receiver.default = 500
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    assert len(sandbox.receiver.calls) == 4  # SANDBOX_WEBHOOK_MAX_ATTEMPTS in the fixture
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == WebhookDelivery.Status.FAILED
    assert delivery.last_status_code == 500
    assert WebhookAttempt.objects.count() == 4


def test_connection_errors_are_recorded(sandbox, settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.SANDBOX_WEBHOOK_MAX_ATTEMPTS = 2
    product_webhooks_point(product="address-verification", url=f"http://127.0.0.1:{port}/v1/webhooks")
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == WebhookDelivery.Status.FAILED
    errors = list(delivery.attempts.values_list("error", flat=True))
    assert len(errors) == 2 and all("ConnectionError" in error for error in errors)


def test_sent_only_after_the_database_transaction_commits(sandbox):
    seed = sandbox.seed
    with db_transaction.atomic():
        transaction_create(product="address-verification", user=seed.users["lender.demo"], loan=seed.loans[0])
        assert webhooks._outstanding == 0  # nothing scheduled before the commit
    assert webhook_deliveries_wait(10)
    assert len(sandbox.receiver.calls) == 1


def test_rolled_back_transaction_sends_nothing(sandbox):
    seed = sandbox.seed
    try:
        with db_transaction.atomic():
            transaction_create(product="address-verification", user=seed.users["lender.demo"], loan=seed.loans[0])
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert webhook_deliveries_wait(10)
    assert sandbox.receiver.calls == []
    assert not WebhookDelivery.objects.exists()


def test_no_subscription_no_delivery(sandbox, api):
    product = sandbox.seed.products["address-verification"]
    api.patch(
        api.url(f"/partner/v2/products/{product.service_id}"),
        json={"webhooks": []},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    ).raise_for_status()
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    assert sandbox.receiver.calls == [] and not WebhookDelivery.objects.exists()


def test_a_latency_fault_delays_the_webhook(sandbox):
    import time

    fault_set(endpoint="webhook", latency=1.0, count=1)
    started = time.monotonic()
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    [call] = sandbox.receiver.calls
    assert call.at - started >= 1.0  # held back at least the fault's latency (a floor, never a ceiling)
    assert WebhookDelivery.objects.get().status == WebhookDelivery.Status.DELIVERED


def test_a_delivery_waits_for_the_emulators_database_and_is_sent(sandbox, settings, monkeypatch):
    """The emulator's own database away when a delivery is tried (restarted during a fault drill):
    the delivery is tried again once it is back, never dropped (a 2,000-order schedule lost a
    "processed" callback so, and its order waited unconfirmed)."""
    from django.db import OperationalError

    settings.SANDBOX_WEBHOOK_BACKOFF = 0.05
    reconnect, away = webhooks.close_old_connections, {"times": 2}

    def database_away_twice():
        if away["times"]:
            away["times"] -= 1
            raise OperationalError("connection refused")
        reconnect()

    monkeypatch.setattr(webhooks, "close_old_connections", database_away_twice)
    host_transaction(sandbox)
    assert webhook_deliveries_wait(10)
    assert away["times"] == 0
    (call,) = sandbox.receiver.calls
    [delivery] = WebhookDelivery.objects.all()
    assert delivery.status == WebhookDelivery.Status.DELIVERED and delivery.attempt_count == 1
