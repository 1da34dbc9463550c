"""Origins: what the host hands our UI (an origin id and a partner access token valid 300 s).

Also the access entitlement check shared with `transactions`: a lender
instance may use a product only when the product's access entitlements allow it.
"""

import secrets
from datetime import timedelta

from django.utils import timezone

from partner.core.logging import secret_register
from partner.platform import urns

from . import documents
from .errors import refused
from .models import Instance, Origin, Product, Transaction
from .selectors import ORIGIN_LIFETIME, digest, loan_lookup, product_lookup, user_lookup


def access_check(product: Product, instance: Instance) -> None:
    """Refuse (403) when the instance may not use the product."""
    if not documents.access_allowed(product.data, urns.instance_urn(instance.instance_id)):
        raise refused(
            f"instance {instance.instance_id} may not use product {product.name} (access entitlements)",
            status=403,
            code="access_denied",
        )


def origin_create(*, user, loan, product, transaction=None) -> Origin:
    """A new origin id and partner access token; the token is on `.partner_access_token` (plaintext, once)."""
    user, loan, product = user_lookup(user), loan_lookup(loan), product_lookup(product)
    if transaction is not None and not isinstance(transaction, Transaction):
        transaction = Transaction.objects.get(pk=transaction)
    if transaction is not None and transaction.product_id != product.pk:
        raise refused("the transaction belongs to another product", code="invalid_request")
    access_check(product, user.instance)
    token = secrets.token_urlsafe(32)
    secret_register(token)
    origin = Origin.objects.create(
        pat_digest=digest(token),
        user=user,
        loan=loan,
        product=product,
        transaction=transaction,
        generated_at=timezone.now(),
    )
    origin.partner_access_token = token
    return origin


def origin_refresh(*, origin: Origin) -> Origin:
    """transaction.refreshOrigin: a new origin id and token for the same context."""
    return origin_create(user=origin.user, loan=origin.loan, product=origin.product, transaction=origin.transaction)


def origin_expire(*, origin: Origin) -> None:
    """Age the origin past its 300 s (the host page's button, and tests)."""
    Origin.objects.filter(pk=origin.pk).update(generated_at=timezone.now() - ORIGIN_LIFETIME - timedelta(seconds=1))
