"""Reads of the catalog: products by name or service id, and the signing secrets for webhooks."""

from partner.core.encryption import Undecryptable
from partner.core.logging import secret_register

from .models import PartnerAccount, Product


def product_get(*, name: str | None = None, service_id: str | None = None) -> Product | None:
    """The local product with that service id (preferred) or name, or None."""
    if service_id:
        product = Product.objects.filter(service_id=service_id).first()
        if product is not None:
            return product
    if name:
        return Product.objects.filter(name=name).first()
    return None


def product_signing_secrets() -> list[tuple[str, str]]:
    """(product name, its own webhook signing secret in plaintext) for every product that has one.

    A secret that no key decrypts is left out (it verifies nothing; /healthz names the product).
    Each secret is also registered with the log redaction, so that none reaches a log line.
    """
    pairs = []
    for name, value in Product.objects.exclude(signing_secret="").values_list("name", "signing_secret"):
        # values_list goes through from_db_value, so these are decrypted.
        if value:
            secret_register(value)
            pairs.append((name, str(value)))
    return pairs


def partner_account_get(*, username: str) -> PartnerAccount | None:
    """The account with that username, with its company (which the credential check reads)."""
    return PartnerAccount.objects.select_related("company").filter(username=username).first()


def products_with_undecryptable_secret() -> list[str]:
    """Names of the products whose signing secret no FIELD_ENCRYPTION_KEYS key decrypts (their
    webhooks are refused until it is set again or the key comes back)."""
    return [
        name
        for name, secret in Product.objects.exclude(signing_secret="").values_list("name", "signing_secret")
        if isinstance(secret, Undecryptable)
    ]


def secrets_health_warnings() -> list[str]:
    """For /healthz: a product whose signing secret cannot be decrypted."""
    names = products_with_undecryptable_secret()
    if not names:
        return []
    return [f"signing secret of {', '.join(names)} cannot be decrypted with FIELD_ENCRYPTION_KEYS: set it again"]
