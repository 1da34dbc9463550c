"""The typical fulfillment sequence end to end, over real HTTP against the sandbox, with a real worker.

The sandbox sends the signed webhook to our live server, the inbox stores it,
a Celery worker (Redis on CI) fetches the transaction, fulfills it, uploads the
report, PATCHes the response, and completes the order on the processed
callback.

What a run decides on its own (credentials refused or missing, a 4xx from the
service, resuming, leases) is proved on the fake platform in `test_pipeline_rules.py`;
what stays here needs the queue, the worker or the sandbox's real HTTP.
"""

import threading
from collections import Counter

import pytest
import requests
from django.conf import settings

from partner.catalog.models import Product
from partner.catalog.services import products_pull
from partner.fulfillment.enqueue import ORDER_RUN_TASK
from partner.fulfillment.models import FailureCode, Order, OrderStatus
from partner.inbox.models import Notification
from partner.platform.signatures import signature_compute
from partner.sandbox.faults import fault_set
from partner.sandbox.models import Response, UploadSlot, WebhookDelivery
from partner.sandbox.products import product_merge
from partner.sandbox.transactions import event_create
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.orders import order_of
from tests.helpers.sandbox import order_placed
from tests.helpers.service_calls import call_kind
from tests.helpers.urn_words import any_urn_words, spelled
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@any_urn_words  # the platform's conformance holds with its own URN words, whatever they are
def test_typical_sequence_from_webhook_to_request_completed(urn_words, demo, service_calls, celery_worker_live):
    service_calls.clear()  # the demo pulled the products already: only the order's calls are counted
    txn = order_placed(demo, loan=2)

    order = order_of(txn.id, OrderStatus.REQUEST_COMPLETED)
    # The webhook and the callback came with the URNs of these words and were handled; the product's
    # lender instance is one of them too (the sandbox wrote it, the catalog's rules took it).
    prefix, platform, host = spelled(urn_words)
    transaction_type = f"{prefix}:{platform}:transaction"
    handled = {(transaction_type, "processed"), (f"{transaction_type}:event", "processed")}
    # (the callback's notification is finished a moment after the order it completed)

    def stored():
        return set(Notification.objects.values_list("resource_type", "state"))

    wait_for(lambda: stored() == handled, message=lambda: f"{handled}, not {stored()}")
    assert Product.objects.get(name="address-verification").access_allow == [f"{prefix}:{host}:BE11223344"]

    assert order.resource_id
    assert order.delivered_at and order.completed_at and order.event_id
    assert order.ordered_by.username == "lender.demo"  # whose page may show the order
    response = Response.objects.get(transaction_id=txn.id)
    assert response.patch_count == 1  # status, loan data and resources in one PATCH
    assert response.data["status"] == "completed"
    assert response.data["loanFormat"] == "application/vnd.plm-2.0.0+json"
    assert response.data["resources"][0]["id"] == order.resource_id
    slot = UploadSlot.objects.get(id=order.resource_id)
    assert bytes(slot.content).startswith(b"%PDF")

    kinds = Counter(call_kind(call) for call in service_calls)
    # The minimum: GET transaction, POST slots, PUT upload, PATCH response; plus GET event for the callback.
    assert kinds == Counter({"transaction": 1, "slots": 1, "upload": 1, "patch": 1, "event": 1})
    assert len(service_calls.tokens) <= 1  # the token of the pull is reused

    status = requests.get(f"{settings.PUBLIC_BASE_URL}/v1/status/{txn.id}", timeout=10).json()
    assert status == {"status": "REQUEST_COMPLETED", "resource_id": order.resource_id}


def test_status_endpoint_404_for_unknown_transaction(service):
    response = requests.get(f"{service.url}/v1/status/no-such-transaction", timeout=10)
    assert response.status_code == 404


def test_address_corrections_reach_the_service(demo, celery_worker_live):
    txn = order_placed(demo, loan=2)
    order_of(txn.id, OrderStatus.REQUEST_COMPLETED)
    sent = Response.objects.get(transaction_id=txn.id).data
    loan_property = demo.loans[2].data["property"]
    assert sent["loan"]["property"]["postalCode"] == loan_property["postalCode"]
    assert sent["partnerStatus"].startswith("Address")
    assert sent["referenceNumber"].startswith("AV-")


def test_duplicate_webhook_is_processed_once(demo, celery_worker_live):
    txn = order_placed(demo)
    order_of(txn.id, OrderStatus.REQUEST_COMPLETED)
    delivery = WebhookDelivery.objects.filter(resource_id=txn.id).first()
    body = bytes(delivery.body)
    signature = signature_compute(body, settings.SVC_SIGNING_SECRETS[0])
    answer = requests.post(
        delivery.url,
        data=body,
        headers={settings.SVC_SIGNATURE_HEADER: signature, "Content-Type": "application/json"},
        timeout=10,
    )
    assert answer.status_code == 202
    webhook_deliveries_wait(timeout=10)
    assert Notification.objects.filter(resource_id=txn.id).count() == 1
    assert Notification.objects.get(resource_id=txn.id).duplicates == 1
    assert Response.objects.get(transaction_id=txn.id).patch_count == 1


def test_injected_503_and_429_then_success(demo, service_calls, celery_worker_live):
    fault_set(endpoint="transaction", status=503, count=2)
    fault_set(endpoint="response", status=429, count=1, retry_after=1)
    txn = order_placed(demo)
    order = order_of(txn.id, OrderStatus.REQUEST_COMPLETED, timeout=90)
    statuses = [call["status"] for call in service_calls if call_kind(call) in ("transaction", "patch")]
    assert statuses.count(503) == 2 and statuses.count(429) == 1
    assert Response.objects.get(transaction_id=txn.id).patch_count == 1
    assert order.attempts >= 2  # the 429 on PATCH was retried by the task, not by the transport


def test_disclosure_action_with_the_entitlement(demo, celery_worker_live):
    txn = order_placed(demo, product="disclosure-delivery", options={"comments": "Sent to borrower"})
    order_of(txn.id, OrderStatus.REQUEST_COMPLETED)
    result = Response.objects.get(transaction_id=txn.id).data["result"]
    assert result == {
        "format": "application/vnd.disclosure.update-status-1.0.0.json",
        "action": "UPDATE_DISCLOSURE_STATUS",
        "details": {"status": "active", "comments": "Sent to borrower"},
    }


def test_disclosure_action_without_the_entitlement_sends_nothing(demo, celery_worker_live):
    # The demo's pull configured it as a disclosure product while it held the entitlement.
    product = demo.products["disclosure-delivery"]
    transactions = product.data["entitlements"]["data"]["transaction"]
    stripped = [{**item, "response": {**item.get("response", {}), "results": []}} for item in transactions]
    product_merge(product_id=product.service_id, patch={"entitlements": {"data": {"transaction": stripped}}})
    products_pull()

    txn = order_placed(demo, product="disclosure-delivery")
    order = order_of(txn.id, OrderStatus.FAILED)
    assert order.failure_code == FailureCode.SETUP_INCOMPLETE  # ours to fix, not the lender's
    assert "entitle" in order.failure_reason.lower()
    assert not Response.objects.filter(transaction_id=txn.id).exists()


def test_broker_down_at_receipt_then_handed_over_by_the_relay(demo, broker_down):
    from celery.contrib.testing.worker import start_worker

    from config.celery import app
    from partner.inbox.models import NotificationState

    txn = order_placed(demo)
    webhook_deliveries_wait(timeout=15)
    stored = wait_for(lambda: Notification.objects.filter(resource_id=txn.id).first(), message="stored notification")
    assert stored.state == NotificationState.RECEIVED
    assert WebhookDelivery.objects.get(resource_id=txn.id).status == "delivered"  # we answered 202

    broker_down()  # the broker is back
    app.control.purge()
    with start_worker(app, pool="threads", concurrency=2, perform_ping_check=False, shutdown_timeout=30):
        order_of(txn.id, OrderStatus.REQUEST_COMPLETED)  # the worker's relay handed it over
    stored.refresh_from_db()
    assert stored.state == NotificationState.PROCESSED
    assert stored.attempts == 1


def test_dropped_webhook_is_fulfilled_by_reconciliation(demo, celery_worker_live):
    from partner.fulfillment.tasks import reconcile

    fault_set(endpoint="webhook", drop_webhooks=True, count=1)
    txn = order_placed(demo)
    webhook_deliveries_wait(timeout=10)
    assert not Notification.objects.filter(resource_id=txn.id).exists()

    assert reconcile.apply().get() == 1
    order_of(txn.id, OrderStatus.REQUEST_COMPLETED)
    assert reconcile.apply().get() == 0  # safe to run again: nothing new


def test_reconciliation_from_two_workers_at_once_opens_one_order(demo, tasks_sent):
    from partner.fulfillment.recovery.reconciliation import transactions_reconcile

    fault_set(endpoint="webhook", drop_webhooks=True, count=1)
    txn = order_placed(demo)
    webhook_deliveries_wait(timeout=10)
    opened = []
    barrier = threading.Barrier(2)

    def run():
        barrier.wait()
        try:
            opened.append(transactions_reconcile())
        finally:
            from django.db import connection

            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    order = Order.objects.get(transaction_id=txn.id)
    assert sorted(opened) == [0, 1]
    # The loser of the race may hand the same order on too: its lease lets one worker through.
    assert tasks_sent and all(sent == (ORDER_RUN_TASK, {"order_id": order.pk}) for sent in tasks_sent)


def test_resource_ref_outside_the_service_is_refused(demo, signed_post, celery_worker_live, service_calls):
    body = (
        b'{"eventId": "evt-evil", "eventTime": "2026-11-22T10:00:00Z", "eventType": "created", "meta": '
        b'{"resourceType": "urn:svc:platform:transaction", "resourceId": "txn-evil", "instanceId": '
        b'"address-verification", "resourceRef": "http://attacker.example/partner/v2/transactions/txn-evil"}}'
    )
    assert signed_post(body).status_code == 202
    order = order_of("txn-evil", OrderStatus.FAILED)
    assert order.failure_code == FailureCode.RESOURCE_OUTSIDE_SERVICE
    assert not [call for call in service_calls if "txn-evil" in call["url"]]  # nothing fetched, from anywhere


def test_a_callback_event_of_another_type_is_recorded_and_completes_nothing(demo, celery_worker_live):
    from partner.fulfillment.models import OrderStep
    from partner.sandbox.models import Transaction

    txn = order_placed(demo)
    order = order_of(txn.id, OrderStatus.REQUEST_COMPLETED)
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.RESPONSE_DELIVERED, completed_at=None)

    other = "urn:svc:platform:transaction:response:rejected"
    event = event_create(transaction=Transaction.objects.get(pk=txn.id), type=other)
    wait_for(
        lambda: OrderStep.objects.filter(order=order, name="event", detail__contains=event.id).exists(),
        message="the event recorded on the order",
    )
    order.refresh_from_db()
    assert order.status == OrderStatus.RESPONSE_DELIVERED  # only "processed" completes an order
    assert other in OrderStep.objects.get(order=order, name="event", detail__contains=event.id).detail
