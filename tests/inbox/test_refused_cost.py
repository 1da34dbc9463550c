"""Refused webhooks cost little: a product's own secret signing bodies that name another product
cannot fill the database (issue: about 35 MB/s of table growth from one client).

A refused request keeps its headers, the body's digest and a bounded excerpt; refused rows are
capped per signing product and window (beyond: counted, logged once, not stored); and they expire
on their own retention, in days.
"""

import hashlib
import logging
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from partner.core.retention import purge_run
from partner.inbox.models import Notification, NotificationState
from tests.helpers.webhooks import naming

pytestmark = pytest.mark.django_db(transaction=True)


def unstored(product):
    return REGISTRY.get_sample_value("partner_webhooks_refused_unstored_total", {"product": product}) or 0


def test_a_refused_webhook_keeps_headers_digest_and_an_excerpt_not_its_body(signed_post, signer, settings):
    body = naming(signer["victim"], "txn-big", padding=200_000)
    response = signed_post(body, secret=signer["secret"], HTTP_USER_AGENT="probe/1.0")
    assert response.status_code == 401

    refused = Notification.objects.get()
    assert refused.state == NotificationState.REFUSED
    assert len(refused.body.encode()) <= settings.INBOX_REFUSED_EXCERPT_BYTES < len(body)
    assert body.decode().startswith(refused.body)
    assert refused.dedupe_key == "refused:" + hashlib.sha256(body).hexdigest()
    assert refused.headers.get("User-Agent") == "probe/1.0"
    assert f"body of {len(body)} bytes" in refused.last_error


def test_refused_rows_are_capped_per_signing_product_then_counted_and_logged_once(
    signed_post, signer, settings, caplog
):
    settings.INBOX_REFUSED_MAX_PER_WINDOW = 3
    caplog.set_level(logging.WARNING, logger="partner.inbox.intake")
    before = unstored(signer["signer"])
    # Every body distinct, and naming products at will: the cap is the signer's, not the named product's.
    for n in range(8):
        named = signer["victim"] if n % 2 else f"made-up-{n}"
        assert signed_post(naming(named, f"txn-{n}"), secret=signer["secret"]).status_code == 401

    assert Notification.objects.filter(state=NotificationState.REFUSED).count() == 3
    assert unstored(signer["signer"]) - before == 5
    assert caplog.text.count("are counted (partner_webhooks_refused_unstored), not stored") == 1
    # A genuine webhook of the victim is still accepted and stored.
    assert signed_post(naming(signer["victim"], "txn-real"), secret=signer["deployment_secret"]).status_code == 202
    assert Notification.objects.filter(state=NotificationState.RECEIVED).count() == 1


def test_refused_rows_expire_on_their_own_retention(signed_post, signer, settings):
    settings.RETENTION_REFUSED_NOTIFICATION_DAYS = 7
    assert signed_post(naming(signer["victim"], "txn-old"), secret=signer["secret"]).status_code == 401
    assert signed_post(naming(signer["victim"], "txn-new"), secret=signer["secret"]).status_code == 401
    assert signed_post(naming(signer["victim"], "txn-ok"), secret=signer["deployment_secret"]).status_code == 202
    old = timezone.now() - timedelta(days=8)
    Notification.objects.filter(resource_id__in=["txn-old", "txn-ok"]).update(
        received_at=old, processed_at=old, state=NotificationState.REFUSED
    )
    Notification.objects.filter(resource_id="txn-ok").update(state=NotificationState.PROCESSED)

    done = {outcome.kind: outcome.rows for outcome in purge_run()}

    assert done["refused notifications"] == 1
    assert set(Notification.objects.values_list("resource_id", flat=True)) == {"txn-new", "txn-ok"}
