"""Secrets at rest: keys rotate end to end, and one secret no key decrypts breaks nothing else."""

import io
import json

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from partner.catalog.models import Product
from partner.core.encryption import Undecryptable, decrypt
from partner.inbox.intake import signing_secrets_forget
from partner.inbox.models import Notification
from tests.helpers.products import product_create

pytestmark = pytest.mark.django_db

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


def stored_ciphertext(product: Product) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT signing_secret FROM catalog_product WHERE id = %s", [product.pk])
        return cursor.fetchone()[0]


@pytest.fixture(autouse=True)
def _secrets_read_again():
    signing_secrets_forget()
    yield
    signing_secrets_forget()


def test_keys_rotate_end_to_end_and_the_old_key_can_be_removed(settings, signed_post):
    settings.FIELD_ENCRYPTION_KEYS = [OLD]
    product = product_create(name="rotating")
    product.signing_secret = "product-secret-rotating"
    product.save()

    settings.FIELD_ENCRYPTION_KEYS = [NEW, OLD]  # the new key in front: new writes use it
    call_command("secrets_reencrypt", stdout=io.StringIO())
    settings.FIELD_ENCRYPTION_KEYS = [NEW]  # the old key retired

    assert decrypt(stored_ciphertext(product)) == "product-secret-rotating"
    assert Product.objects.get(pk=product.pk).signing_secret == "product-secret-rotating"
    meta = {"resourceType": "x", "resourceId": "1", "instanceId": "rotating"}
    body = json.dumps({"eventTime": "2026-11-23T10:00:00Z", "eventType": "created", "meta": meta}).encode()
    assert signed_post(body, secret="product-secret-rotating").status_code == 202


def test_an_undecryptable_secret_is_skipped_flagged_and_kept(settings, signed_post, staff):
    settings.FIELD_ENCRYPTION_KEYS = [OLD]
    lost = product_create(name="lost-key")
    lost.signing_secret = "secret-under-a-lost-key"
    lost.save()
    ciphertext = stored_ciphertext(lost)
    settings.FIELD_ENCRYPTION_KEYS = [NEW]

    # Every other webhook keeps working (it used to answer 500 for all of them).
    body = json.dumps(
        {"eventTime": "2026-11-23T10:00:00Z", "eventType": "created", "meta": {"resourceType": "x", "resourceId": "2"}}
    ).encode()
    assert signed_post(body).status_code == 202
    assert Notification.objects.count() == 1

    # Flagged: health (still 200: the application serves) and the admin.
    health = Client().get("/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "degraded"
    assert "lost-key" in health.json()["warnings"][0]
    page = staff.get(reverse("admin:catalog_product_changelist")).content.decode()
    assert "cannot be decrypted" in page

    # Read as empty, never as the ciphertext; saved back unchanged.
    product = Product.objects.get(pk=lost.pk)
    assert isinstance(product.signing_secret, Undecryptable) and product.signing_secret == ""
    product.listing_name = "edited"
    product.save()
    assert stored_ciphertext(product) == ciphertext

    # The command says which value it could not rewrite; the key coming back brings it back.
    with pytest.raises(CommandError, match="catalog.Product.signing_secret"):
        call_command("secrets_reencrypt", stdout=io.StringIO())
    settings.FIELD_ENCRYPTION_KEYS = [NEW, OLD]
    assert Product.objects.get(pk=lost.pk).signing_secret == "secret-under-a-lost-key"
