"""Writes of the sandbox: tokens, seeding, origins, transactions, responses, uploads,
products and fault rules. Views call these; tests call them directly too.

Refusals raise `ApplicationError` with the HTTP status to answer and, in
`extra["problems"]`, a list of `{"field", "message"}`.
"""

import hmac
import json
import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db_transaction
from django.utils import timezone

from partner.core.errors import ApplicationError
from partner.core.logging import secret_register
from partner.platform import formats, urns

from . import demo, documents, faults, webhooks
from .models import (
    AccessToken,
    ApiClient,
    Event,
    FaultRule,
    Instance,
    LenderUser,
    Loan,
    Origin,
    Product,
    Response,
    Transaction,
    UploadSlot,
)
from .selectors import (
    ORIGIN_LIFETIME,
    digest,
    event_ref,
    loan_lookup,
    product_lookup,
    sandbox_base_url,
    transaction_ref,
    user_lookup,
)


def refused(message: str, *, status: int = 400, problems: list | None = None, code: str = "invalid_request"):
    return ApplicationError(message, status_code=status, extra={"error": code, "problems": problems or []})


# Tokens
# ------------------------------------------------------------------------------
def _client_known(client_id: str, client_secret: str) -> bool:
    configured = hmac.compare_digest(client_id.encode(), settings.SVC_CLIENT_ID.encode()) & hmac.compare_digest(
        client_secret.encode(), settings.SVC_CLIENT_SECRET.encode()
    )
    if configured:
        return True
    row = ApiClient.objects.filter(client_id=client_id, active=True).first()
    return row is not None and hmac.compare_digest(row.secret_digest, digest(client_secret))


def token_issue(*, client_id: str, client_secret: str, scope: str = "") -> tuple[str, int]:
    """An access token for a known confidential client: (token, lifetime in seconds)."""
    if not client_id or not client_secret or not _client_known(client_id, client_secret):
        raise refused("client authentication failed", status=401, code="invalid_client")
    lifetime = int(getattr(settings, "SANDBOX_TOKEN_LIFETIME", 3600))
    # Tokens are requested rarely (clients cache them): a good moment to drop long-expired rows.
    AccessToken.objects.filter(expires_at__lt=timezone.now() - timedelta(days=1)).delete()
    token = secrets.token_urlsafe(32)
    secret_register(token)
    AccessToken.objects.create(
        digest=digest(token),
        client_id=client_id,
        scope=scope[:200],
        expires_at=timezone.now() + timedelta(seconds=lifetime),
    )
    return token, lifetime


def token_revoke_all() -> int:
    """Expire every access token (tests: the client must fetch a new one)."""
    return AccessToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))


def api_client_create(*, client_id: str, client_secret: str) -> ApiClient:
    client, _ = ApiClient.objects.update_or_create(
        client_id=client_id, defaults={"secret_digest": digest(client_secret), "active": True}
    )
    return client


# Demo data
# ------------------------------------------------------------------------------
@dataclass
class Seed:
    instance: Instance
    users: dict[str, LenderUser] = field(default_factory=dict)
    loans: list[Loan] = field(default_factory=list)
    products: dict[str, Product] = field(default_factory=dict)


@db_transaction.atomic
def sandbox_seed(*, public_base_url: str | None = None, reset: bool = False) -> Seed:
    """Create the demo data, or bring it up to date (idempotent).

    An existing demo product keeps what was PUT or PATCHed into it except its
    interface and webhook URLs, which follow `public_base_url`, and its signing
    secret, which is the first of SVC_SIGNING_SECRETS; `reset` restores it whole.
    """
    base = (public_base_url or settings.PUBLIC_BASE_URL).rstrip("/")
    instance, _ = Instance.objects.update_or_create(
        instance_id=demo.INSTANCE_ID, defaults={"name": demo.INSTANCE_NAME, "address": demo.INSTANCE_ADDRESS}
    )
    seed = Seed(instance=instance)
    for item in demo.USERS:
        user = LenderUser.objects.filter(username=item["username"]).first() or LenderUser(username=item["username"])
        user.instance = instance
        for name in ("name", "email", "phone", "role", "personas"):
            setattr(user, name, item[name])
        if user.credentials != item["credentials"]:
            user.credentials = item["credentials"]
        user.save()
        seed.users[user.username] = user
    for item in demo.LOANS:
        loan, _ = Loan.objects.update_or_create(
            guid=item["guid"], defaults={"instance": instance, "data": item["data"]}
        )
        seed.loans.append(loan)
    secret = settings.SVC_SIGNING_SECRETS[0]
    for document in demo.product_documents(base):
        product = Product.objects.filter(service_id=document["id"]).first()
        if product is None or reset:
            product = product or Product(service_id=document["id"])
            product.name = document["name"]
            product.data = document
        else:
            product.data = {**product.data, **demo.demo_url_fields(product.data | {"name": product.name}, base)}
        if product.signing_secret != secret:
            product.signing_secret = secret
        product.save()
        seed.products[product.name] = product
    return seed


# Origins
# ------------------------------------------------------------------------------
def _access_check(product: Product, instance: Instance) -> None:
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
    _access_check(product, user.instance)
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


# Transactions
# ------------------------------------------------------------------------------
def transaction_create(
    *,
    product,
    user,
    loan,
    request_type: str = "NEW_REQUEST",
    options: dict | None = None,
    send_webhook: bool = True,
    base_url: str | None = None,
) -> Transaction:
    """A lender's transaction request: stored, then announced by the `created` webhook after commit."""
    product, user, loan = product_lookup(product), user_lookup(user), loan_lookup(loan)
    if options is not None and not isinstance(options, dict):
        raise refused("request.options must be an object", problems=[documents.problem("request.options", "object")])
    if request_type not in (product.data.get("requestTypes") or []):
        raise refused(
            f"product {product.name} does not take request type {request_type}",
            problems=[documents.problem("request.type", "not one of the product's requestTypes")],
        )
    _access_check(product, user.instance)
    entitlement = documents.entitlement_for(product.data, request_type)
    request = {
        "type": request_type,
        "options": options or {},
        "loanFormat": formats.LOAN_FORMAT,
        "loan": documents.loan_filtered(loan.data, (entitlement or {}).get("request")),
    }
    credentials = user.credentials
    base = (base_url or sandbox_base_url()).rstrip("/")
    with db_transaction.atomic():
        transaction = Transaction.objects.create(
            product=product,
            user=user,
            loan=loan,
            request=request,
            credentials_encrypted=json.dumps(credentials) if credentials else "",
        )
        if send_webhook:
            webhooks.delivery_create(
                product=product,
                resource_type=urns.transaction_resource_type(),
                resource_id=transaction.id,
                resource_ref=transaction_ref(base, transaction.id),
            )
    return transaction


def transaction_create_from_origin(*, origin: Origin, request_type: str = "NEW_REQUEST", options=None, base_url=None):
    """The host's "create transaction" on an origin: its product, user and loan."""
    transaction = transaction_create(
        product=origin.product,
        user=origin.user,
        loan=origin.loan,
        request_type=request_type or "NEW_REQUEST",
        options=options,
        base_url=base_url,
    )
    Origin.objects.filter(pk=origin.pk).update(transaction=transaction)
    return transaction


# Responses, slots, uploads, events
# ------------------------------------------------------------------------------
def _merge_resources(current: list, incoming: list) -> list:
    """Resources accumulate: a PATCH adds attachments (same id: replaced), it never drops earlier ones."""
    merged = {item["id"]: item for item in current if isinstance(item, dict) and "id" in item}
    for item in incoming:
        merged[item["id"]] = item
    return list(merged.values())


def _resources_check(transaction: Transaction, resources: list) -> list[dict]:
    slots = {
        slot.id: slot
        for slot in UploadSlot.objects.filter(transaction=transaction, id__in=[r["id"] for r in resources])
    }
    problems = []
    for index, item in enumerate(resources):
        slot = slots.get(item["id"])
        where = f"resources[{index}]"
        if slot is None:
            problems.append(documents.problem(f"{where}.id", "was not returned by a slot request of this transaction"))
        elif slot.uploaded_at is None:
            problems.append(documents.problem(f"{where}.id", "has not been uploaded"))
        else:
            if "name" in item and item["name"] != slot.name:
                problems.append(documents.problem(f"{where}.name", "differs from the slot's name"))
            if "mimeType" in item and item["mimeType"] != slot.mime_type:
                problems.append(documents.problem(f"{where}.mimeType", "differs from the slot's mimeType"))
    return problems


def response_patch(*, transaction_id: str, payload, base_url: str | None = None) -> Response:
    """PATCH the transaction response (#3): check every rule, merge, and process it when it is complete.

    A PATCH is "processed" (an event of type ...:response:processed and its
    `created` webhook) when it sets status `completed`, when it carries an
    action `result`, or when it adds `resources` to a response already
    completed; every other PATCH is only merged.
    """
    base = (base_url or sandbox_base_url()).rstrip("/")
    with db_transaction.atomic():
        transaction = (
            Transaction.objects.select_for_update().select_related("product").filter(pk=transaction_id).first()
        )
        if transaction is None:
            raise refused("no such transaction", status=404, code="not_found")
        status, problems = documents.response_problems(
            payload, product_data=transaction.product.data, request_type=transaction.request_type
        )
        if problems:
            code = "invalid_response" if status == 400 else "not_entitled"
            raise refused("the response does not conform", status=status, problems=problems, code=code)
        if payload.get("resources"):
            problems = _resources_check(transaction, payload["resources"])
            if problems:
                raise refused(
                    "the response refers to unknown resources", status=409, problems=problems, code="invalid_resources"
                )
        response, _ = Response.objects.get_or_create(transaction=transaction)
        incoming = {key: value for key, value in payload.items() if key != "resources"}
        merged = documents.merge_patch(response.data, incoming)
        if "resources" in payload:
            merged["resources"] = _merge_resources(response.data.get("resources") or [], payload["resources"])
        response.data = merged
        response.patch_count += 1
        processed = (
            payload.get("status") == formats.RESPONSE_COMPLETED
            or "result" in payload
            or (bool(payload.get("resources")) and merged.get("status") == formats.RESPONSE_COMPLETED)
        )
        if processed:
            response.processed_count += 1
        response.save()
        if isinstance(merged.get("status"), str) and merged["status"] != transaction.status:
            Transaction.objects.filter(pk=transaction.pk).update(
                status=merged["status"][:50], updated_at=timezone.now()
            )
        if processed:
            event_create(
                transaction=transaction,
                type=urns.response_processed_event_type(),
                base_url=base,
                data={"responseVersion": response.patch_count},
            )
    return response


def event_create(*, transaction: Transaction, type: str, base_url: str | None = None, data=None) -> Event:
    """A transaction event and its `urn:svc:platform:transaction:event` / `created` webhook."""
    base = (base_url or sandbox_base_url()).rstrip("/")
    event = Event.objects.create(transaction=transaction, type=type, data=data or {})
    webhooks.delivery_create(
        product=transaction.product,
        resource_type=urns.event_resource_type(),
        resource_id=event.id,
        resource_ref=event_ref(base, transaction.id, event.id),
    )
    return event


def slots_request(*, transaction_id: str, items, base_url: str | None = None) -> list[dict]:
    """Upload slots (#4), one per item and in order, each with a one-time authorization value."""
    base = (base_url or sandbox_base_url()).rstrip("/")
    problems = documents.slot_request_problems(items)
    if problems:
        raise refused("the slot request does not conform", problems=problems)
    if not Transaction.objects.filter(pk=transaction_id).exists():
        raise refused("no such transaction", status=404, code="not_found")
    answer, rows = [], []
    for position, item in enumerate(items):
        authorization = f"SvcUpload {secrets.token_urlsafe(32)}"
        secret_register(authorization)
        slot = UploadSlot(
            transaction_id=transaction_id,
            position=position,
            name=item["name"],
            mime_type=item["mimeType"],
            authorization_digest=digest(authorization),
        )
        rows.append(slot)
        answer.append(
            {
                "id": slot.id,
                "name": slot.name,
                "mimeType": slot.mime_type,
                "location": f"{base}/uploads/{slot.id}",
                "authorization": authorization,
            }
        )
    UploadSlot.objects.bulk_create(rows)
    return answer


def upload_accept(*, slot_id: str, authorization: str | None, content_type: str | None, content: bytes) -> UploadSlot:
    """The upload (#5): right one-time authorization, Content-Type equal to the slot's mimeType."""
    with db_transaction.atomic():
        slot = UploadSlot.objects.select_for_update().filter(pk=slot_id).first()
        if slot is None:
            raise refused("no such upload location", status=404, code="not_found")
        if not authorization or not hmac.compare_digest(slot.authorization_digest, digest(authorization)):
            raise refused("the upload authorization is missing or wrong", status=401, code="invalid_authorization")
        if slot.uploaded_at is not None:
            raise refused("this upload authorization was already used", status=409, code="already_uploaded")
        if (content_type or "").strip().lower() != slot.mime_type.lower():
            raise refused(
                f"Content-Type must be the slot's mimeType {slot.mime_type}",
                status=415,
                code="unsupported_media_type",
            )
        slot.content = content
        slot.size = len(content)
        slot.uploaded_at = timezone.now()
        slot.save(update_fields=["content", "size", "uploaded_at", "updated_at"])
    return slot


# Products
# ------------------------------------------------------------------------------
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


# Faults
# ------------------------------------------------------------------------------
def fault_set(
    *,
    endpoint: str = FaultRule.Endpoint.ANY,
    status: int | None = None,
    rate: float = 1.0,
    latency: float = 0.0,
    drop_webhooks: bool = False,
    count: int | None = None,
    retry_after: int = 1,
) -> FaultRule:
    """Add a fault rule: `count` limits it to the next N matching calls."""
    if endpoint not in FaultRule.Endpoint.values:
        raise refused(f"unknown endpoint {endpoint!r}; one of {FaultRule.Endpoint.values}")
    if status is not None and not (status == 429 or 500 <= status <= 599):
        raise refused("a fault status is 429 or 5xx")
    if not 0.0 <= rate <= 1.0 or latency < 0 or (count is not None and count < 0):
        raise refused("rate is 0..1, latency and count are not negative")
    if drop_webhooks and endpoint not in (FaultRule.Endpoint.WEBHOOK, FaultRule.Endpoint.ANY):
        raise refused("drop_webhooks applies to the 'webhook' endpoint")
    rule = FaultRule.objects.create(
        endpoint=endpoint,
        status=status,
        rate=rate,
        latency=latency,
        drop_webhooks=drop_webhooks,
        remaining=count,
        retry_after=retry_after,
    )
    faults.rules_forget()
    return rule


def faults_clear() -> int:
    deleted, _ = FaultRule.objects.all().delete()
    faults.rules_forget()
    return deleted
