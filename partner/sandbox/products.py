"""Products of the sandbox as the partner changes them: PUT (#9) and PATCH (#10), and tests' shortcuts.

Managed fields (id, partnerId, created, createdBy) are never changed by a
partner's write; a product name must stay unique.
"""

from django.db import transaction as db_transaction

from partner.core.logging import secret_register

from . import documents
from .errors import refused
from .models import Product
from .selectors import product_lookup


def _product_store(product: Product, document: dict) -> Product:
    problems = documents.product_problems(document)
    if problems:
        raise refused("the product does not conform", problems=problems, code="invalid_product")
    if (
        document["name"] != product.name
        and Product.objects.filter(name=document["name"]).exclude(pk=product.pk).exists()
    ):
        raise refused(
            "another product has this name",
            status=409,
            problems=[documents.problem("name", "is taken")],
            code="conflict",
        )
    for name in documents.PRODUCT_READ_ONLY:
        if name in product.data:
            document[name] = product.data[name]
    document["id"] = product.service_id
    product.name = document["name"]
    product.data = document
    product.save(update_fields=["name", "data", "updated_at"])
    return product


@db_transaction.atomic
def product_replace(*, product_id: str, document) -> Product:
    """PUT product (#9): the full object replaces the stored one (managed fields stay)."""
    product = Product.objects.select_for_update().filter(service_id=product_id).first()
    if product is None:
        raise refused("no such product", status=404, code="not_found")
    if isinstance(document, dict):
        problems = documents.read_only_problems(document, {**product.data, "id": product.service_id})
        if problems:
            raise refused("the product does not conform", problems=problems, code="invalid_product")
    return _product_store(product, dict(document) if isinstance(document, dict) else document)


@db_transaction.atomic
def product_merge(*, product_id: str, patch) -> Product:
    """PATCH product (#10): RFC 7396 merge patch of the stored object."""
    product = Product.objects.select_for_update().filter(service_id=product_id).first()
    if product is None:
        raise refused("no such product", status=404, code="not_found")
    if not isinstance(patch, dict):
        raise refused("a merge patch of a product must be a JSON object", code="invalid_product")
    current = {**product.data, "id": product.service_id, "name": product.name}
    problems = documents.read_only_problems(patch, current)
    if problems:
        raise refused("the patch changes managed fields", problems=problems, code="invalid_product")
    return _product_store(product, documents.merge_patch(current, patch))


def product_webhooks_point(*, product, url: str) -> Product:
    """Point every webhook subscription of a product at `url` (tests use a local receiver)."""
    product = product_lookup(product)
    product.data = {**product.data, "webhooks": [{**item, "url": url} for item in product.data.get("webhooks") or []]}
    product.save(update_fields=["data", "updated_at"])
    return product


def product_signing_secret_set(*, product, secret: str) -> Product:
    product = product_lookup(product)
    secret_register(secret)
    product.signing_secret = secret
    product.save(update_fields=["signing_secret", "updated_at"])
    return product
