"""A webhook is trusted only as far as its signer: a product's secret speaks for that product alone.

The deployment's secrets (SVC_SIGNING_SECRETS) sign for any product; a product's own secret only
for notifications naming it (meta.instanceId). A mismatch is answered 401, logged, and kept in the
inbox as `refused` without taking the place of the genuine notification. The secrets are kept in
memory, so a refused webhook costs no query.
"""

import json
import logging

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partner.inbox.intake import signing_secrets_forget
from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notification_replay
from tests.helpers.products import product_create

pytestmark = pytest.mark.django_db(transaction=True)

SECRET_A = "secret-of-product-a-0123456789"
SECRET_B = "secret-of-product-b-0123456789"


def notification(product_name, resource_id="txn-1"):
    return json.dumps(
        {
            "eventTime": "2026-11-22T10:00:00Z",
            "eventType": "created",
            "meta": {
                "resourceType": "urn:svc:platform:transaction",
                "resourceId": resource_id,
                "instanceId": product_name,
                "resourceRef": f"http://127.0.0.1:8000/sandbox/partner/v2/transactions/{resource_id}",
            },
        }
    ).encode()


@pytest.fixture
def two_products(settings):
    settings.SVC_SIGNING_SECRETS = ["deployment-wide-secret-2026"]
    product_create(name="product-a", signing_secret=SECRET_A)
    product_create(name="product-b", signing_secret=SECRET_B, credentials=False)
    signing_secrets_forget()
    yield
    signing_secrets_forget()


def test_a_product_secret_signs_for_its_own_product(signed_post, two_products):
    assert signed_post(notification("product-a"), secret=SECRET_A).status_code == 202
    assert Notification.objects.get().state == NotificationState.RECEIVED


def test_a_deployment_secret_signs_for_any_product(signed_post, two_products):
    deployment = "deployment-wide-secret-2026"
    assert signed_post(notification("product-b"), secret=deployment).status_code == 202
    assert signed_post(notification("no-such-product", "txn-2"), secret=deployment).status_code == 202


def test_another_products_secret_is_refused_logged_and_kept_as_refused(signed_post, two_products, caplog):
    caplog.set_level(logging.WARNING, logger="partner.inbox.intake")
    response = signed_post(notification("product-b"), secret=SECRET_A)

    assert response.status_code == 401
    refused = Notification.objects.get()
    assert refused.state == NotificationState.REFUSED
    assert refused.product_name == "product-b"
    assert "product-a" in refused.last_error and "product-b" in refused.last_error
    assert "signed with the secret of product-a, but names product-b" in caplog.text
    assert SECRET_A not in caplog.text and SECRET_A not in refused.last_error
    assert notification_replay(notification_id=refused.pk) is False  # never processed, not even by hand
    assert Notification.objects.get().state == NotificationState.REFUSED


def test_a_forged_copy_does_not_take_the_genuine_notifications_place(signed_post, two_products):
    body = notification("product-b")
    assert signed_post(body, secret=SECRET_A).status_code == 401
    assert signed_post(body, secret=SECRET_A).status_code == 401  # counted once, as a duplicate
    assert signed_post(body, secret=SECRET_B).status_code == 202

    refused = Notification.objects.get(state=NotificationState.REFUSED)
    assert refused.duplicates == 1
    genuine = Notification.objects.get(state=NotificationState.RECEIVED)
    assert genuine.dedupe_key != refused.dedupe_key


def test_a_product_secret_cannot_sign_a_notification_naming_no_product(signed_post, two_products):
    body = json.loads(notification("product-a"))
    del body["meta"]["instanceId"]
    assert signed_post(json.dumps(body).encode(), secret=SECRET_A).status_code == 401
    assert Notification.objects.get().state == NotificationState.REFUSED


def test_refused_webhooks_cost_no_query(signed_post, two_products):
    assert signed_post(notification("product-a"), secret=SECRET_A).status_code == 202  # secrets read now
    with CaptureQueriesContext(connection) as queries:
        for n in range(50):
            assert signed_post(notification("product-a", f"txn-{n}"), secret="forged").status_code == 401
    assert len(queries) == 0


def test_a_secret_set_a_moment_ago_is_accepted(signed_post, two_products, settings, monkeypatch):
    from partner.catalog.models import Product
    from partner.inbox import intake

    assert signed_post(notification("product-a"), secret=SECRET_A).status_code == 202  # secrets read now
    product = Product.objects.get(name="product-b")
    product.signing_secret = "rotated-secret-of-product-b-99"
    product.save()
    # Past the re-read interval (not the whole cache lifetime): a refusal reads the secrets again first.
    monkeypatch.setattr(intake, "_SECRETS_REREAD", 0.0)
    assert signed_post(notification("product-b", "txn-9"), secret="rotated-secret-of-product-b-99").status_code == 202
