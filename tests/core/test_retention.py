"""The retention purge: what is past retention is erased or deleted, nothing of an open order is,
a dry run changes nothing, the command says what it did, and the daily task runs the same purge.

Run on PostgreSQL too (`eval "$(bin/test-services)"`): the purge commits batch by batch, so the
tests that count on it run outside the test's transaction (`transaction=True`).
"""

import json
from datetime import timedelta
from io import StringIO
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from partner.core.retention import purge_plan, purge_run, retention_cutoff
from partner.fulfillment.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryKind,
    DeliveryState,
    Order,
    OrderDocument,
    OrderStatus,
    OrderStep,
)
from partner.inbox.models import Notification, NotificationState
from partner.sandbox import models as sandbox
from partner.sandbox.seeding import sandbox_seed

PERSONAL_RESPONSE = {"partnerStatus": "Address corrected", "loan": {"property": {"street": "1 Main St"}}}
PDF = b"%PDF-1.4 the borrower's report"
REFUSAL_ANSWER = '{"detail": "street 1 Main St is not valid"}'


def _ago(now, days):
    return now - timedelta(days=days) if days is not None else None


def _order(now, transaction_id, status, *, finished=None, created=None):
    """An order with everything personal we keep of one: response, errors, a PDF, step details."""
    order = Order.objects.create(
        transaction_id=transaction_id,
        status=status,
        response=PERSONAL_RESPONSE,
        # What the work found: the property's address before and after, personal like the response.
        findings=[{"field": "city", "label": "City", "before": "Boston", "after": "New York", "changed": True}],
        reference_number=f"AV-{transaction_id}",
        last_error="the service said 503",
        failure_reason="ZIP code 99999 is not a known US ZIP code" if status == OrderStatus.FAILED else "",
        failure_code="order_refused" if status == OrderStatus.FAILED else "",
        prepared_at=_ago(now, created),
        delivered_at=_ago(now, finished if status == OrderStatus.REQUEST_COMPLETED else created),
        completed_at=_ago(now, finished) if status == OrderStatus.REQUEST_COMPLETED else None,
        failed_at=_ago(now, finished) if status == OrderStatus.FAILED else None,
    )
    Order.objects.filter(pk=order.pk).update(created_at=_ago(now, created), updated_at=_ago(now, finished or 1))
    document = OrderDocument(
        order=order,
        position=0,
        name=f"address-verification-AV-{transaction_id}.pdf",
        mime_type="application/pdf",
        size=len(PDF),
        resource_id=f"res-{transaction_id}",
        upload_location="https://uploads.example/slot",
        upload_authorization="Bearer one-time",
        uploaded_at=_ago(now, created),
    )
    document.file.save(document.name, ContentFile(PDF), save=False)
    document.save()
    for name in ("opened", "failed"):
        step = OrderStep.objects.create(order=order, name=name, detail="ZIP code 99999 refused")
        OrderStep.objects.filter(pk=step.pk).update(created_at=_ago(now, created))
    # A PATCH tried and refused: the service's answer may quote what we sent.
    delivery = Delivery.objects.create(order=order, kind=DeliveryKind.RESULT, state=DeliveryState.FAILED)
    DeliveryAttempt.objects.create(
        order=order, delivery=delivery, call="response", started_at=now, status_code=422, answer=REFUSAL_ANSWER
    )
    return order


def _notification(now, key, *, resource_id, state=NotificationState.PROCESSED, received, processed=None, event=None):
    """A transaction notification, or with `event` a callback event notification of `resource_id`."""
    ref = f"{settings.SVC_BASE_URL}/partner/v2/transactions/{resource_id}"
    notification = Notification.objects.create(
        dedupe_key=key,
        resource_type="urn:svc:platform:transaction" + (":event" if event else ""),
        resource_id=event or resource_id,
        resource_ref=f"{ref}/events/{event}" if event else ref,
        event_type="created",
        body=json.dumps({"meta": {"resourceId": resource_id}}),
        headers={"User-Agent": "svc-webhooks/1", "X-Forwarded-For": "203.0.113.9"},
        remote_addr="203.0.113.9",
        state=state,
        processed_at=_ago(now, processed),
    )
    Notification.objects.filter(pk=notification.pk).update(received_at=_ago(now, received))
    return notification


def _sandbox_order(now, seed, transaction_id, *, created):
    """The emulator's record of an order: transaction, response, upload slot with its bytes, event,
    webhook deliveries (of the transaction and of the event) and the origin it was placed from."""
    product, user, loan = next(iter(seed.products.values())), seed.users["lender.demo"], seed.loans[0]
    txn = sandbox.Transaction.objects.create(
        id=transaction_id, product=product, user=user, loan=loan, request={"loan": loan.data}
    )
    sandbox.Response.objects.create(transaction=txn, data=PERSONAL_RESPONSE)
    sandbox.UploadSlot.objects.create(transaction=txn, name="r.pdf", mime_type="application/pdf", content=PDF)
    event = sandbox.Event.objects.create(transaction=txn, type="urn:svc:platform:transaction:response:processed")
    for resource_id in (txn.id, event.id):
        sandbox.WebhookDelivery.objects.create(
            product=product,
            url="http://x/v1/webhooks",
            resource_type="t",
            resource_id=resource_id,
            body=b"{}",
            status=sandbox.WebhookDelivery.Status.DELIVERED,
        )
    sandbox.Origin.objects.create(
        pat_digest="d", user=user, loan=loan, product=product, transaction=txn, generated_at=now
    )
    for model in (sandbox.Transaction, sandbox.WebhookDelivery):
        model.objects.filter(created_at__gte=now - timedelta(minutes=5)).update(created_at=_ago(now, created))
    sandbox.Origin.objects.filter(transaction=txn).update(generated_at=_ago(now, created))
    return txn


@pytest.fixture
def world():
    """Open and finished orders of every age, their notifications, and the emulator's records."""
    now = timezone.now()
    done, failed, open_, n = OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED, OrderStatus.IN_PROGRESS, {}
    orders = {
        "done-old": _order(now, "done-old", done, finished=100, created=120),
        "failed-old": _order(now, "failed-old", failed, finished=100, created=101),
        "done-recent": _order(now, "done-recent", done, finished=10, created=11),
        "done-ancient": _order(now, "done-ancient", done, finished=400, created=401),
        # Open, and as old as the oldest: nothing of them is touched.
        "txn-7": _order(now, "txn-7", open_, created=500),
        "delivered": _order(now, "delivered", OrderStatus.RESPONSE_DELIVERED, created=200),
        # Finished, with an id that begins like the open txn-7's.
        "txn-77": _order(now, "txn-77", done, finished=100, created=101),
    }
    n["done-old"] = _notification(now, "k1", resource_id="done-old", received=120, processed=120)
    n["done-old-event"] = _notification(now, "k2", resource_id="done-old", received=100, processed=100, event="e1")
    n["txn-77-event"] = _notification(now, "k3", resource_id="txn-77", received=100, processed=100, event="e2")
    n["ignored-old"] = _notification(now, "k4", resource_id="x", state=NotificationState.IGNORED, received=40)
    n["recent"] = _notification(now, "k5", resource_id="done-recent", received=10, processed=10)
    n["processed-late"] = _notification(now, "k6", resource_id="y", received=40, processed=20)
    n["queued-old"] = _notification(now, "k7", resource_id="z", state=NotificationState.QUEUED, received=100)
    n["open"] = _notification(now, "k8", resource_id="txn-7", received=500, processed=500)
    n["open-event"] = _notification(
        now, "k9", resource_id="delivered", state=NotificationState.FAILED, received=200, processed=200, event="e3"
    )
    n["ancient"] = _notification(now, "k10", resource_id="done-ancient", received=401, processed=401)
    seed = sandbox_seed()
    sandboxed = {
        "done-old": _sandbox_order(now, seed, "done-old", created=8),
        "txn-7": _sandbox_order(now, seed, "txn-7", created=8),
        "done-recent": _sandbox_order(now, seed, "done-recent", created=2),
    }
    pending = sandbox.WebhookDelivery.objects.create(
        product=next(iter(seed.products.values())), url="http://x", resource_type="t", resource_id="q", body=b"{}"
    )
    sandbox.WebhookDelivery.objects.filter(pk=pending.pk).update(created_at=_ago(now, 30))
    return SimpleNamespace(now=now, orders=orders, notifications=n, sandboxed=sandboxed, pending=pending)


def _erased(order):
    order.refresh_from_db()
    attachment = order.attachments.get()
    steps = list(order.steps.values_list("detail", flat=True))
    return (
        order.response is None
        and order.findings == []
        and order.last_error == order.failure_reason == ""
        and not attachment.file
        and attachment.upload_location == attachment.upload_authorization == ""
        and all(detail == "" for detail in steps)
        and list(DeliveryAttempt.objects.filter(order=order).values_list("answer", flat=True)) == [""]
    )


def _untouched(order):
    order.refresh_from_db()
    attachment = order.attachments.get()
    return (
        order.response == PERSONAL_RESPONSE
        and order.findings != []
        and attachment.read() == PDF
        and attachment.upload_authorization == "Bearer one-time"
        and list(order.steps.values_list("detail", flat=True)) == ["ZIP code 99999 refused"] * 2
        and list(DeliveryAttempt.objects.filter(order=order).values_list("answer", flat=True)) == [REFUSAL_ANSWER]
    )


def _body_erased(notification):
    notification.refresh_from_db()
    return notification.body == "" and notification.headers == {} and notification.remote_addr is None


@pytest.mark.django_db(transaction=True)
def test_purge_erases_and_deletes_what_is_past_retention_and_nothing_of_an_open_order(world):
    outcomes = {outcome.kind: outcome for outcome in purge_run(batch_size=2)}  # several batches per kind

    orders = world.orders
    for name in ("done-old", "failed-old", "txn-77", "done-ancient"):
        assert _erased(orders[name]), name
    for name in ("done-recent", "txn-7", "delivered"):
        assert _untouched(orders[name]), name
    # The skeleton stays: what happened and when, for the dashboard and dedupe.
    kept = Order.objects.get(transaction_id="failed-old")
    assert (kept.status, kept.failure_code, kept.reference_number) == ("FAILED", "order_refused", "AV-failed-old")
    assert kept.attachments.get().resource_id == "res-failed-old"
    assert OrderStep.objects.filter(order=orders["done-old"]).count() == 2
    assert not OrderStep.objects.filter(order=orders["done-ancient"]).exists()  # a year after it finished
    assert OrderStep.objects.filter(order=orders["txn-7"]).count() == 2  # open: kept, however old

    n = world.notifications
    for name in ("done-old", "done-old-event", "txn-77-event", "ignored-old"):
        assert _body_erased(n[name]), name
    erased = Notification.objects.get(pk=n["done-old"].pk)
    assert (erased.dedupe_key, erased.resource_id, erased.state) == ("k1", "done-old", "processed")
    for name in ("recent", "processed-late", "queued-old", "open", "open-event"):
        n[name].refresh_from_db()
        assert n[name].body and n[name].remote_addr == "203.0.113.9", name
    assert not Notification.objects.filter(pk=n["ancient"].pk).exists()

    assert set(sandbox.Transaction.objects.values_list("id", flat=True)) == {"txn-7", "done-recent"}
    assert not sandbox.UploadSlot.objects.filter(transaction_id="done-old").exists()
    assert sandbox.UploadSlot.objects.filter(transaction_id="txn-7").exists()
    assert sandbox.Event.objects.filter(transaction_id="txn-7").exists()
    kept_deliveries = set(sandbox.WebhookDelivery.objects.values_list("resource_id", flat=True))
    open_event = sandbox.Event.objects.get(transaction_id="txn-7").id
    assert {"txn-7", open_event, "done-recent", world.pending.resource_id} <= kept_deliveries
    assert "done-old" not in kept_deliveries
    assert set(sandbox.Origin.objects.values_list("transaction_id", flat=True)) == {"txn-7", "done-recent"}

    rows = {kind: outcome.rows for kind, outcome in outcomes.items()}
    assert rows == {
        "order data": 4,
        "documents": 4,
        "order steps": 2,
        "notification bodies": 5,  # the ancient one's too, erased before its row is deleted
        "notifications": 1,
        "refused notifications": 0,
        "sandbox transactions": 1,
        "sandbox webhook deliveries": 2,
        "sandbox origins": 1,
        "connector events": 0,  # no connected product here (tests/connector/test_retention.py)
        "idempotent answers": 0,
    }
    assert not any(outcome.error for outcome in outcomes.values())
    # Done: a second run finds nothing more.
    assert all(outcome.rows == 0 for outcome in purge_run())


@pytest.mark.django_db
def test_dry_run_changes_nothing_and_says_what_the_purge_would_do(world):
    def snapshot():
        return (
            list(Order.objects.order_by("pk").values_list("response", "last_error", "failure_reason")),
            [a.read() for a in OrderDocument.objects.order_by("pk")],
            list(OrderStep.objects.order_by("pk").values_list("pk", "detail")),
            list(Notification.objects.order_by("pk").values_list("pk", "body", "remote_addr")),
            sorted(sandbox.Transaction.objects.values_list("id", flat=True)),
            sandbox.WebhookDelivery.objects.count(),
            sandbox.Origin.objects.count(),
        )

    before = snapshot()
    out = StringIO()
    call_command("purge", "--dry-run", stdout=out)
    assert snapshot() == before

    plan = {outcome.kind: outcome.rows for outcome in purge_plan()}
    done = {outcome.kind: outcome.rows for outcome in purge_run()}
    assert plan == done  # the dry run counts exactly what the purge then does
    text = out.getvalue()
    assert "order data: would erase 4 (cut-off " in text
    assert "order steps: would delete 2 (cut-off " in text
    assert "notification bodies: would erase 5 " in text
    assert "sandbox transactions: would delete 1 " in text
    cutoff = retention_cutoff("RETENTION_NOTIFICATION_BODY_DAYS")
    assert f"{cutoff:%Y-%m-%d}" in text and "RETENTION_NOTIFICATION_BODY_DAYS=30 days" in text
    assert text.rstrip().endswith("Dry run: nothing was changed.")
    assert "1 Main St" not in text and "99999" not in text  # counts, never data


@pytest.mark.django_db
def test_command_purges_and_says_what_it_did_and_what_is_kept_for_ever(world, settings):
    settings.RETENTION_STEP_DAYS = 0
    out = StringIO()
    call_command("purge", stdout=out)
    text = out.getvalue()
    assert "order data: erased 4 (cut-off " in text
    assert "notifications: deleted 1 (cut-off " in text
    assert "order steps: kept for ever (RETENTION_STEP_DAYS=0)" in text
    assert "would" not in text
    assert OrderStep.objects.filter(order=world.orders["done-ancient"]).count() == 2  # kept for ever
    assert _erased(world.orders["done-ancient"])


@pytest.mark.django_db
def test_a_redelivered_notification_is_still_recognised_after_its_body_was_erased(signed_post, settings):
    body = (
        '{"eventTime": "2026-11-22T10:00:00Z", "eventType": "created", "meta": {"resourceType": '
        '"urn:svc:platform:transaction", "resourceId": "txn-r", "instanceId": "address-verification", '
        f'"resourceRef": "{settings.SVC_BASE_URL}/partner/v2/transactions/txn-r"}}}}'
    ).encode()
    assert signed_post(body).status_code == 202
    old = timezone.now() - timedelta(days=31)
    Notification.objects.update(state=NotificationState.PROCESSED, processed_at=old, received_at=old)
    purge_run()
    assert Notification.objects.get().body == ""

    assert signed_post(body).status_code == 202
    notification = Notification.objects.get()  # the same row: not stored, not processed again
    assert (notification.duplicates, notification.state) == (1, NotificationState.PROCESSED)


@pytest.mark.django_db(transaction=True)
def test_an_interrupted_purge_keeps_the_batches_it_committed(world):
    updates, fail_at = [], [2]

    def an_update_fails(execute, sql, params, many, context):
        if sql.startswith("UPDATE") and "inbox_notification" in sql:
            updates.append(sql)
            if len(updates) == fail_at[0]:
                raise connection.Database.OperationalError("lock timeout")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(an_update_fails):
        outcomes = {outcome.kind: outcome for outcome in purge_run(batch_size=1)}

    bodies = outcomes["notification bodies"]
    assert (bodies.rows, bodies.error) == (1, "OperationalError")
    # The first batch (one row) stayed done; the rest waits for the next run.
    assert list(Notification.objects.filter(body="").values_list("dedupe_key", flat=True)) == ["k1"]
    assert outcomes["sandbox transactions"].rows == 1 and not outcomes["sandbox transactions"].error  # the others ran

    updates.clear()
    fail_at[0] = 1
    with connection.execute_wrapper(an_update_fails), pytest.raises(CommandError, match="notification bodies failed"):
        call_command("purge", stdout=StringIO())


def test_the_purge_runs_daily_as_a_task(settings):
    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["core.purge"] == 24 * 60 * 60
    from config.celery import app

    app.loader.import_default_modules()  # as a worker does when it starts: the apps' tasks modules
    assert "core.purge" in app.tasks


@pytest.mark.django_db(transaction=True)  # a task tidies connections as a worker does: outside a test's transaction
def test_the_daily_task_runs_the_same_purge(world):
    from partner.core.tasks import purge

    result = purge.apply().get()
    rows = {item["kind"]: item["rows"] for item in result}
    assert rows["order data"] == 4 and rows["notification bodies"] == 5
    assert _erased(world.orders["done-old"]) and _untouched(world.orders["txn-7"])
    assert _body_erased(world.notifications["done-old"])


def test_a_retention_of_zero_keeps_for_ever_and_a_negative_one_is_refused(settings):
    from django.core.exceptions import ImproperlyConfigured

    settings.RETENTION_SANDBOX_DAYS = 0
    assert retention_cutoff("RETENTION_SANDBOX_DAYS") is None
    settings.RETENTION_SANDBOX_DAYS = -1
    with pytest.raises(ImproperlyConfigured, match="RETENTION_SANDBOX_DAYS"):
        retention_cutoff("RETENTION_SANDBOX_DAYS")


@pytest.mark.django_db
def test_a_failed_order_whose_data_was_purged_is_not_retried_with_an_empty_response():
    from partner.fulfillment.models import Order, OrderStatus
    from partner.fulfillment.orders.services import order_retry

    now = timezone.now()
    purged = Order.objects.create(
        transaction_id="t-purged", status=OrderStatus.FAILED, prepared_at=now, failed_at=now, response=None
    )
    kept = Order.objects.create(
        transaction_id="t-kept", status=OrderStatus.FAILED, prepared_at=now, failed_at=now, response={"a": 1}
    )
    assert order_retry(order_id=purged.pk) is False
    assert order_retry(order_id=kept.pk) is True
