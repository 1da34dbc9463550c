"""The sandbox admin pages render and show no secret."""

import pytest
from django.urls import reverse

from partner.sandbox.faults import fault_set
from partner.sandbox.models import (
    Event,
    FaultRule,
    LenderUser,
    Loan,
    Origin,
    Product,
    Response,
    Transaction,
    UploadSlot,
    WebhookAttempt,
    WebhookDelivery,
)
from partner.sandbox.origins import origin_create
from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.transactions import transaction_create
from partner.sandbox.uploads import upload_accept, upload_slots_request

MODELS = [Transaction, Response, Event, WebhookDelivery, UploadSlot, FaultRule, Product, Origin, LenderUser, Loan]


@pytest.fixture
def loop(db, settings):
    settings.SVC_SIGNING_SECRETS = ["a-long-signing-secret-value"]
    seed = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    transaction = transaction_create(
        product="address-verification", user=seed.users["lender.demo"], loan=seed.loans[1], send_webhook=False
    )
    origin_create(user="lender.demo", loan=seed.loans[1], product="address-verification", transaction=transaction)
    slot = upload_slots_request(
        transaction_id=transaction.id,
        items=[{"name": "a.pdf", "mimeType": "application/pdf"}],
        base_url="http://testserver/sandbox",
    )[0]
    upload_accept(
        slot_id=slot["id"], authorization=slot["authorization"], content_type="application/pdf", content=b"%PDF"
    )
    Response.objects.create(transaction=transaction, data={"status": "completed"})
    event = Event.objects.create(transaction=transaction, type="urn:svc:platform:transaction:response:processed")
    delivery = WebhookDelivery.objects.create(
        product=seed.products["address-verification"],
        url="http://x/v1/webhooks",
        resource_type="urn:svc:platform:transaction:event",
        resource_id=event.id,
        body=b'{"eventId": "1"}',
    )
    WebhookAttempt.objects.create(delivery=delivery, number=1, started_at=delivery.created_at, status_code=202)
    fault_set(endpoint="products", status=503, count=1)
    return transaction


@pytest.mark.parametrize("model", MODELS)
def test_admin_pages_render_without_secrets(admin_client, loop, model):
    opts = model._meta
    listing = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert listing.status_code == 200
    row = model.objects.first()
    detail = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk]))
    assert detail.status_code == 200
    for page in (listing, detail):
        text = page.content.decode()
        assert "demo-password-1" not in text
        assert "a-long-signing-secret-value" not in text
        assert "SvcUpload" not in text
