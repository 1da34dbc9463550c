"""The catalog as every order reads it: all products with their credential definitions, kept whole
under one key of Django's shared cache.

Every automated order reads its product and the product's credential definitions, and staff change
them a few times a year. So the whole catalog (a handful of products) sits under ONE key of the
`default` cache, which every web and worker process shares (a file cache on one machine, Redis with
CACHE_URL): one cache GET per order instead of two SQL statements, and a rename or a new product
needs no bookkeeping of keys.

- No secret goes into the cache: the products' encrypted fields (the signing secret) are deferred,
  so neither plaintext nor ciphertext is pickled; reading one on a cached product loads it from
  the database.
- A save or delete of a Product or CredentialDefinition drops the key at once (signals, connected
  by `CatalogConfig.ready()`; a queryset's delete sends post_delete per row when receivers exist),
  and its commit puts a short-lived "changed" marker in its place. A reader stores what it loaded
  with `cache.add`, which the marker refuses: a worker that read the old rows before the commit
  cannot keep them, and readers go to the database while the marker lasts.
  `CATALOG_CACHE_SECONDS` bounds what escapes both (a change made in SQL, a restored database,
  a drop lost to a cache outage).
- `.update()` sends no signal: code that updates these models calls `catalog_cache_drop()` (the
  admin's unpushed mark). `secrets_reencrypt` (partner/core) rewrites only the signing secret,
  which is never cached.
- The cache never fails an order: its error is logged once (its type, never a value) and the
  database answers.
- Beside it, under a small key of its own, the names of the connected products
  (`catalog_connected`): every move of every order asks the connector whether any product is
  connected, and a frozenset of a few names answers it without unpickling the catalog (~17 kB). It
  is made from the catalog, stored with `cache.add` as the catalog is, and dropped and marked with
  it: the same rules keep both fresh. (What escapes them may last up to twice
  `CATALOG_CACHE_SECONDS` there: names made from a copy of the catalog about to expire.)
"""

import logging

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import post_delete, post_save

from partner.core.cache import CacheFailures
from partner.core.encryption import EncryptedTextField

from .fulfiller_keys import CONNECTED
from .models import CredentialDefinition, Product

logger = logging.getLogger(__name__)

# Versioned: a change to what is stored takes a new key, so no process unpickles the old shape.
CATALOG_CACHE_KEY = "catalog:products:v2"  # v2: the products' response form
CONNECTED_CACHE_KEY = "catalog:connected:v1"  # the connected products' names (a frozenset)
# Dropped and marked together by every change: one rule for both.
CATALOG_CACHE_KEYS = (CATALOG_CACHE_KEY, CONNECTED_CACHE_KEY)
# What a commit leaves under the key: long enough to outlast a load that began before the commit.
CHANGED_MARKER = "changed"
CHANGED_MARKER_SECONDS = 10

_failures = CacheFailures(logger, "catalog", "the products")  # a failure logged once, until it answers


def _secret_fields() -> list[str]:
    return [f.name for f in Product._meta.concrete_fields if isinstance(f, EncryptedTextField)]


def products_load() -> list[Product]:
    """Every product, its credential definitions prefetched and its secret fields deferred (2 queries)."""
    return list(Product.objects.defer(*_secret_fields()).prefetch_related("credential_definitions"))


def catalog_products() -> list[Product]:
    """The whole catalog: from the shared cache, else from the database (then stored for the next reader).

    For reading: each call unpickles its own copy; a product to change is loaded from the database.
    """
    try:
        stored = cache.get(CATALOG_CACHE_KEY)
    except Exception as exc:  # whatever the backend raises (Redis away, a file unreadable)
        _failures.failed("read", exc)
        return products_load()
    _failures.answered()
    if isinstance(stored, list):
        return stored
    products = products_load()
    if stored is None:  # else the marker of a change just committed: leave it be
        catalog_store(products)
    return products


def catalog_store(products: list[Product]) -> None:
    """Store a loaded catalog, unless one is there or a change has just committed (`add`, not `set`)."""
    try:
        cache.add(CATALOG_CACHE_KEY, products, settings.CATALOG_CACHE_SECONDS)
    except Exception as exc:
        _failures.failed("store", exc)


def connected_names(products: list[Product]) -> frozenset[str]:
    """The names of the products our connector's systems work (fulfiller `CONNECTED`)."""
    return frozenset(product.name for product in products if product.fulfiller == CONNECTED)


def catalog_connected() -> frozenset[str]:
    """The names of the connected products: from their small key in the shared cache, else made from
    the catalog (`catalog_products`: itself cached) and stored for the next reader, as the catalog is
    (`add`: a change's marker refuses it). Empty when no product is connected."""
    try:
        stored = cache.get(CONNECTED_CACHE_KEY)
    except Exception as exc:
        _failures.failed("read", exc)
        return connected_names(products_load())
    _failures.answered()
    if isinstance(stored, frozenset):
        return stored
    names = connected_names(catalog_products())
    if stored is None:  # else the marker of a change just committed: leave it be
        try:
            cache.add(CONNECTED_CACHE_KEY, names, settings.CATALOG_CACHE_SECONDS)
        except Exception as exc:
            _failures.failed("store", exc)
    return names


def catalog_product(*, service_id: str | None, name: str | None) -> Product | None:
    """The catalog's product with that service id (preferred) or name, as `product_get` finds it."""
    products = catalog_products()
    if service_id:
        for product in products:
            if product.service_id == service_id:
                return product
    if name:
        for product in products:
            if product.name == name:
                return product
    return None


def catalog_cache_drop(*, using: str | None = None) -> None:
    """Drop the cached catalog (and the connected products' names) now, and again (leaving the marker)
    when the current transaction commits."""
    try:
        cache.delete_many(CATALOG_CACHE_KEYS)
    except Exception as exc:
        _drop_failed(exc)
    transaction.on_commit(_changed_mark, using=using)


def _changed_mark() -> None:
    try:
        cache.set_many(dict.fromkeys(CATALOG_CACHE_KEYS, CHANGED_MARKER), CHANGED_MARKER_SECONDS)
    except Exception as exc:
        _drop_failed(exc)


def _catalog_changed(sender, using=None, **kwargs) -> None:
    catalog_cache_drop(using=using)


def receivers_connect() -> None:
    """Drop the cached catalog with every save and delete of a product or a credential definition."""
    for model in (Product, CredentialDefinition):
        label = model._meta.label_lower
        post_save.connect(_catalog_changed, sender=model, dispatch_uid=f"catalog-cache-save-{label}")
        post_delete.connect(_catalog_changed, sender=model, dispatch_uid=f"catalog-cache-delete-{label}")


def _drop_failed(exc: Exception) -> None:
    # Rare (a staff change) and worth each line: orders may read the old copy until it expires.
    logger.warning(
        "catalog: the shared cache failed to drop the cached products (%s); orders may read the old ones "
        "for up to %s s",
        type(exc).__name__,
        settings.CATALOG_CACHE_SECONDS,
    )
