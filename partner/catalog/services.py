"""Writes of the catalog: keep our products in step with the service, and manage partner accounts.

- `products_pull()` reads every page of the product listing (#8) and upserts
  each product and its credential definitions.
- `product_push(product)` replaces the service's product (PUT #9) with our full
  object, pointed at this deployment's public address; `product_diff(product)`
  shows beforehand what that would change.
- `product_access_patch(product, ...)` merge-patches (#10) only
  `entitlements.access.allow`/`deny`.
- `product_ensure(...)` gives the local product, pulling it when we lack it;
  `product_for_order(...)` the same for an order, from the catalog kept in the shared cache.
- `products_import(documents)` stores products as a pull would, from a listing saved beforehand
  (`make demo` fills the catalog from the sandbox's seed before the service is up).
- `product_staff_settings_set(...)` sets our own settings of a product: its turnaround and the
  staff e-mail address (local fields, never pushed, kept by every pull).
- `product_fulfiller_set(...)` sets which of our fulfillers works a product (local, kept by every
  pull): a key no fulfiller registered is refused.

The service has no "get one product" endpoint: the current copy of a product is
found by paging through the listing.
"""

import copy
import logging
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from partner.core.errors import ApplicationError
from partner.platform.errors import RequestRefused, ServiceError

from . import validation
from .errors import ProductNotFound, ProductSyncError
from .fulfiller_keys import fulfiller_default, fulfiller_known
from .mapping import (
    credential_definitions_from_service,
    flatten,
    product_fields_from_service,
    product_to_service,
)
from .models import (
    CredentialDefinition,
    PartnerAccount,
    PartnerCompany,
    Product,
)
from .product_cache import catalog_product

logger = logging.getLogger(__name__)

PAGE_SIZE = 50  # the largest page the service gives (spec, Limits)


@dataclass
class PullResult:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.created) + len(self.updated)

    def __str__(self):
        text = f"{len(self.created)} created, {len(self.updated)} updated"
        if self.skipped:
            text += f", {len(self.skipped)} skipped ({'; '.join(self.skipped)})"
        return text


@dataclass(frozen=True)
class DiffLine:
    path: str
    ours: object
    theirs: object


@dataclass
class ProductDiff:
    product: Product
    found: bool  # does the service list the product at all?
    lines: list[DiffLine]

    @property
    def changed(self) -> bool:
        return not self.found or bool(self.lines)


def _client():
    # Imported when used: the catalog's models, admin and checks load without the client.
    from partner.platform import client

    return client


def _service_call(what: str, call, *args):
    try:
        return call(*args)
    except (ServiceError, RequestRefused) as exc:
        # Their texts are safe by contract (no token, short excerpt).
        logger.warning("catalog: %s failed: %s", what, exc)
        raise ProductSyncError(f"{what} failed: {exc}") from exc


def _definitions_replace(product: Product, definitions: list[dict]) -> None:
    keep = []
    for position, item in enumerate(definitions):
        key = str(item["id"])
        values = {
            "type": str(item.get("type") or "string"),
            "title": str(item.get("title") or ""),
            "minimum": item.get("minimum") if isinstance(item.get("minimum"), int) else None,
            "maximum": item.get("maximum") if isinstance(item.get("maximum"), int) else None,
            "pattern": str(item.get("pattern") or ""),
            "secret": bool(item.get("secret", False)),
            "scope": item.get("scope") if item.get("scope") in CredentialDefinition.Scope.values else "user",
            "required": bool(item.get("required", False)),
            "position": position,
        }
        CredentialDefinition.objects.update_or_create(product=product, key=key, defaults=values)
        keep.append(key)
    product.credential_definitions.exclude(key__in=keep).delete()


def _product_upsert(data: dict, *, keep_unpushed: bool) -> tuple[Product | None, str]:
    """Store one service product; returns (product, "created"|"updated") or (None, reason)."""
    try:
        return _product_upsert_once(data, keep_unpushed=keep_unpushed)
    except IntegrityError:
        # Another worker stored the same product a moment ago: now it is an update.
        return _product_upsert_once(data, keep_unpushed=keep_unpushed)


def _product_upsert_once(data: dict, *, keep_unpushed: bool) -> tuple[Product | None, str]:
    fields = product_fields_from_service(data)
    if not fields["service_id"] or not fields["name"]:
        return None, "a product without id or name"
    with transaction.atomic():
        product = Product.objects.select_for_update().filter(service_id=fields["service_id"]).first()
        clash = Product.objects.filter(name=fields["name"]).exclude(service_id=fields["service_id"]).first()
        if clash is not None:
            return None, f"{fields['name']}: the name is taken by local product id {clash.service_id}"
        if product is not None and product.unpushed_changes and keep_unpushed:
            return None, f"{product.name}: edited here and not pushed yet, left as it is"
        outcome = "updated"
        if product is None:
            product = Product(fulfiller=fulfiller_default(data))
            outcome = "created"
        for name, value in fields.items():
            setattr(product, name, value)
        product.pulled_at = timezone.now()
        product.unpushed_changes = False
        product.save()
        definitions = credential_definitions_from_service(data)
        if definitions is not None:
            _definitions_replace(product, definitions)
    return product, outcome


def products_pull(*, keep_unpushed: bool = False) -> PullResult:
    """Read every page of the service's product listing (#8) and upsert each product.

    `keep_unpushed` (the periodic pull) skips products with service fields edited here and
    not pushed yet, so staff edits are never overwritten behind their backs; a pull asked
    for by hand takes the service's copy.
    """
    result = PullResult()

    def pull():
        for listed in _client().iter_products(page_size=PAGE_SIZE):
            product, outcome = _product_upsert(listed.raw, keep_unpushed=keep_unpushed)
            if product is None:
                result.skipped.append(outcome)
            else:
                getattr(result, outcome).append(product.name)

    _service_call("Pulling the products", pull)
    logger.info("catalog: products pulled from the service: %s", result)
    return result


def products_import(documents, *, keep_unpushed: bool = True) -> PullResult:
    """Store the products of a saved listing (Product objects, as #8 lists them) as a pull would.

    For a catalog filled before the service can be reached (the demo's first start); the next pull
    takes the service's own copy. Products edited here and not pushed are left as they are, as by
    the periodic pull, unless `keep_unpushed` is false.
    """
    if not isinstance(documents, list) or not all(isinstance(item, dict) for item in documents):
        raise ApplicationError("A product listing is a JSON array of Product objects.")
    result = PullResult()
    for data in documents:
        product, outcome = _product_upsert(data, keep_unpushed=keep_unpushed)
        if product is None:
            result.skipped.append(outcome)
        else:
            getattr(result, outcome).append(product.name)
    logger.info("catalog: products imported from a saved listing: %s", result)
    return result


def product_staff_settings_set(
    *, name: str, turnaround_hours: int | None = None, staff_email: str | None = None
) -> Product:
    """Set our own settings of a product: the turnaround we promise (hours) and where staff are told
    of its orders. Both are local (never pushed to the service, kept by every pull); None leaves one
    as it is, 0 and "" clear it."""
    product = Product.objects.filter(name=name).first()
    if product is None:
        raise ProductNotFound(f"We hold no product {name!r}: pull or import it first.")
    if turnaround_hours is not None:
        if isinstance(turnaround_hours, bool) or not isinstance(turnaround_hours, int) or turnaround_hours < 0:
            raise ApplicationError("The turnaround is a whole number of hours (0 clears it).")
        product.turnaround_hours = turnaround_hours or None
    if staff_email is not None:
        try:
            product.staff_email = Product._meta.get_field("staff_email").clean(staff_email.strip(), product)
        except ValidationError as exc:
            raise ApplicationError(f"The staff e-mail address is not valid: {' '.join(exc.messages)}") from None
    product.save(update_fields=["turnaround_hours", "staff_email", "updated_at"])
    logger.info("catalog: product %s: turnaround %s h, staff e-mail set", product.name, product.turnaround_hours)
    return product


def product_fulfiller_set(*, name: str, fulfiller: str) -> Product:
    """Set which of our fulfillers works the product (`fulfiller_keys`): local, never pushed, kept by
    every pull. A key no fulfiller registered is refused, nothing changed. The save drops the cached
    catalog (`product_cache`), so every process reads the new fulfiller from its next order."""
    if not isinstance(fulfiller, str) or not fulfiller_known(fulfiller):
        raise ApplicationError(f"No fulfiller has the key {fulfiller!r}.")
    product = Product.objects.filter(name=name).first()
    if product is None:
        raise ProductNotFound(f"We hold no product {name!r}: pull or import it first.")
    if product.fulfiller != fulfiller:
        product.fulfiller = fulfiller
        product.save(update_fields=["fulfiller", "updated_at"])
        logger.info("catalog: product %s: fulfiller %s", product.name, fulfiller)
    return product


def service_product_find(*, service_id: str | None = None, name: str | None = None) -> dict | None:
    """The service's current copy of one product, found by paging through the listing."""

    def find():
        for listed in _client().iter_products(page_size=PAGE_SIZE):
            if (service_id and listed.id == service_id) or (name and listed.name == name):
                return listed.raw
        return None

    return _service_call("Reading the product listing", find)


def product_ensure(*, name: str | None = None, service_id: str | None = None) -> Product:
    """The local product, else the one the service lists (pulled and stored); ProductNotFound otherwise."""
    from .selectors import product_get

    if not name and not service_id:
        raise ValueError("product_ensure needs a name or a service_id")
    product = product_get(name=name, service_id=service_id)
    if product is not None:
        return product
    data = service_product_find(service_id=service_id, name=name)
    if data is None:
        raise ProductNotFound(f"The service lists no product {service_id or name!r}.")
    product, outcome = _product_upsert(data, keep_unpushed=False)
    if product is None:
        raise ProductSyncError(f"The product could not be stored: {outcome}.")
    return product


def product_for_order(*, service_id: str | None = None, name: str | None = None) -> Product:
    """The product an order names, its credential definitions loaded: from the catalog kept in the
    shared cache, so an order reads it with no SQL (why and how it stays fresh:
    partner/catalog/product_cache.py). For reading only: a product to change is loaded from the database.

    Same lookup as `product_get` (service id preferred, else name). A product the catalog lacks is
    what `product_ensure` gives (the database, then pulled from the service), raising as it does:
    ValueError, ProductNotFound, ProductSyncError.
    """
    if not name and not service_id:
        raise ValueError("product_for_order needs a name or a service_id")
    product = catalog_product(service_id=service_id, name=name)
    if product is not None:
        return product
    return product_ensure(name=name, service_id=service_id)


def _validated(product: Product) -> None:
    try:
        product.full_clean(validate_unique=False)
    except ValidationError as exc:
        problems = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
        raise ApplicationError(f"Product {product.name} is not valid: {problems}", extra=exc.message_dict) from None


def product_diff(product: Product) -> ProductDiff:
    """What a push would change on the service: our full object against the service's copy."""
    ours = product_to_service(product, point_at_public_url=True)
    theirs = service_product_find(service_id=product.service_id)
    if theirs is None:
        return ProductDiff(product=product, found=False, lines=[])
    mine, service = flatten(ours), flatten(theirs)
    missing = object()
    lines = []
    for path in sorted(set(mine) | set(service)):
        a, b = mine.get(path, missing), service.get(path, missing)
        if a != b:
            lines.append(DiffLine(path, None if a is missing else a, None if b is missing else b))
    return ProductDiff(product=product, found=True, lines=lines)


def product_push(product: Product) -> Product:
    """Replace the service's product with ours (PUT #9), pointed at this deployment's address."""
    _validated(product)
    body = product_to_service(product, point_at_public_url=True)
    answer = _service_call(f"Pushing product {product.name}", _client().replace_product, product.service_id, body)
    stored = answer.raw if answer is not None and answer.id == product.service_id else body
    fields = product_fields_from_service(stored)
    with transaction.atomic():
        for name, value in fields.items():
            setattr(product, name, value)
        product.pushed_at = timezone.now()
        product.unpushed_changes = False
        product.save()
    logger.info("catalog: product %s pushed to the service", product.name)
    return product


def _unique(items) -> list[str]:
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def product_access_patch(
    product: Product,
    *,
    allow_add=(),
    deny_add=(),
    allow_remove=(),
    deny_remove=(),
    allow=(),
    deny=(),
) -> Product:
    """Merge-patch (#10) the product's access entitlements and nothing else.

    Adding an instance to one list takes it off the other. The lists are computed
    from the service's current copy (a merge patch replaces arrays whole), so that
    an instance someone allowed on the service meanwhile is kept.
    `allow`/`deny` are the same as `allow_add`/`deny_add`.
    """
    allow_add, deny_add = [*allow_add, *allow], [*deny_add, *deny]
    for value in [*allow_add, *deny_add, *allow_remove, *deny_remove]:
        problem = validation.instance_urn_problem(value)
        if problem:
            raise ApplicationError(problem)
    current = service_product_find(service_id=product.service_id)
    if current is None:
        raise ProductNotFound(f"The service lists no product {product.service_id!r} ({product.name}).")
    access = (current.get("entitlements") or {}).get("access") or {}
    allowed = [u for u in access.get("allow") or [] if u not in deny_add and u not in allow_remove]
    denied = [u for u in access.get("deny") or [] if u not in allow_add and u not in deny_remove]
    allowed, denied = _unique([*allowed, *allow_add]), _unique([*denied, *deny_add])
    patch = {"entitlements": {"access": {"allow": allowed, "deny": denied}}}
    _service_call(f"Patching the access of product {product.name}", _client().patch_product, product.service_id, patch)
    with transaction.atomic():
        product.access_allow, product.access_deny = allowed, denied
        raw = copy.deepcopy(product.raw) if isinstance(product.raw, dict) else {}
        raw.setdefault("entitlements", {}).setdefault("access", {}).update({"allow": allowed, "deny": denied})
        product.raw = raw
        product.save(update_fields=["access_allow", "access_deny", "raw", "updated_at"])
    logger.info(
        "catalog: access of product %s patched (allow +%s -%s, deny +%s -%s)",
        product.name,
        allow_add,
        list(allow_remove),
        deny_add,
        list(deny_remove),
    )
    return product


def partner_account_set(
    *, username: str, password: str | None = None, company: str | None = None, active: bool | None = None
) -> tuple[PartnerAccount, bool]:
    """Create or update a partner account; returns (account, created). The password is hashed."""
    username = username.strip()
    if not username:
        raise ApplicationError("A username is required.")
    with transaction.atomic():
        account, created = PartnerAccount.objects.select_for_update().get_or_create(username=username)
        if company:
            account.company, _ = PartnerCompany.objects.get_or_create(name=company, defaults={"code": company})
        if password is not None:
            if not password:
                raise ApplicationError("The password must not be empty.")
            account.set_password(password)
        elif created:
            raise ApplicationError("A new account needs a password.")
        if active is not None:
            account.active = active
        account.save()
    logger.info("catalog: partner account %s %s", username, "created" if created else "updated")
    return account, created
