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

from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notification_replay
from tests.helpers.webhooks import naming

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_product_secret_signs_for_its_own_product(signed_post, signer):
    assert signed_post(naming(signer["signer"]), secret=signer["secret"]).status_code == 202
    assert Notification.objects.get().state == NotificationState.RECEIVED


def test_a_deployment_secret_signs_for_any_product(signed_post, signer):
    deployment = signer["deployment_secret"]
    assert signed_post(naming(signer["victim"]), secret=deployment).status_code == 202
    assert signed_post(naming("no-such-product", "txn-2"), secret=deployment).status_code == 202


def test_another_products_secret_is_refused_logged_and_kept_as_refused(signed_post, signer, caplog):
    caplog.set_level(logging.WARNING, logger="partner.inbox.intake")
    response = signed_post(naming(signer["victim"]), secret=signer["secret"])

    assert response.status_code == 401
    refused = Notification.objects.get()
    assert refused.state == NotificationState.REFUSED
    assert refused.product_name == signer["victim"]
    assert signer["signer"] in refused.last_error and signer["victim"] in refused.last_error
    assert f"signed with the secret of {signer['signer']}, but names {signer['victim']}" in caplog.text
    assert signer["secret"] not in caplog.text and signer["secret"] not in refused.last_error
    assert notification_replay(notification_id=refused.pk) is False  # never processed, not even by hand
    assert Notification.objects.get().state == NotificationState.REFUSED


def test_a_forged_copy_does_not_take_the_genuine_notifications_place(signed_post, signer):
    body = naming(signer["victim"])
    assert signed_post(body, secret=signer["secret"]).status_code == 401
    assert signed_post(body, secret=signer["secret"]).status_code == 401  # counted once, as a duplicate
    assert signed_post(body, secret=signer["victim_secret"]).status_code == 202

    refused = Notification.objects.get(state=NotificationState.REFUSED)
    assert refused.duplicates == 1
    genuine = Notification.objects.get(state=NotificationState.RECEIVED)
    assert genuine.dedupe_key != refused.dedupe_key


def test_a_product_secret_cannot_sign_a_notification_naming_no_product(signed_post, signer):
    body = json.loads(naming(signer["signer"]))
    del body["meta"]["instanceId"]
    assert signed_post(json.dumps(body).encode(), secret=signer["secret"]).status_code == 401
    assert Notification.objects.get().state == NotificationState.REFUSED


def test_refused_webhooks_cost_no_query(signed_post, signer):
    assert signed_post(naming(signer["signer"]), secret=signer["secret"]).status_code == 202  # secrets read now
    with CaptureQueriesContext(connection) as queries:
        for n in range(50):
            assert signed_post(naming(signer["signer"], f"txn-{n}"), secret="forged").status_code == 401
    assert len(queries) == 0


def test_a_secret_set_a_moment_ago_is_accepted(signed_post, signer, settings, monkeypatch):
    from partner.catalog.models import Product
    from partner.inbox import intake

    assert signed_post(naming(signer["signer"]), secret=signer["secret"]).status_code == 202  # secrets read now
    product = Product.objects.get(name=signer["victim"])
    product.signing_secret = "rotated-secret-of-product-b-99"
    product.save()
    # Past the re-read interval (not the whole cache lifetime): a refusal reads the secrets again first.
    monkeypatch.setattr(intake, "_SECRETS_REREAD", 0.0)
    assert signed_post(naming(signer["victim"], "txn-9"), secret="rotated-secret-of-product-b-99").status_code == 202
