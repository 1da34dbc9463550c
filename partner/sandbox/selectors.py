"""Reads of the sandbox: token and origin checks, pages, and the JSON shapes the API returns."""

import hashlib
import hmac
import json
from datetime import UTC, timedelta

from django.conf import settings
from django.db import connections
from django.utils import timezone

from partner.platform import formats, urns

from . import documents
from .models import AccessToken, Event, Instance, LenderUser, Loan, Origin, Product, ResponsePatch, Transaction

ORIGIN_LIFETIME = timedelta(seconds=300)
_TOKEN_SQL = f"SELECT 1 FROM {AccessToken._meta.db_table} WHERE digest = %s AND expires_at > %s"  # noqa: S608


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def access_token_valid(*, token: str) -> bool:
    """One indexed lookup: is `token` an unexpired access token?"""
    if not token:
        return False
    # Every call of every endpoint passes here: plain SQL on the unique digest
    # index spares the ORM's query compilation (most of the cost at this size).
    connection = connections[AccessToken.objects.db]
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(_TOKEN_SQL, [digest(token), now])
        return cursor.fetchone() is not None


def origin_get_valid(*, origin_id: str, partner_access_token: str) -> Origin | None:
    """The origin when the pair is right and younger than 300 s; None otherwise."""
    if not origin_id or not partner_access_token:
        return None
    origin = (
        Origin.objects.select_related("user__instance", "loan__instance", "product", "transaction")
        .filter(origin_id=origin_id, generated_at__gt=timezone.now() - ORIGIN_LIFETIME)
        .first()
    )
    if origin is None or not hmac.compare_digest(origin.pat_digest, digest(partner_access_token)):
        return None
    return origin


def sandbox_base_url(request=None) -> str:
    """Absolute address of the sandbox ({base_url} of the spec) for resourceRef and upload locations.

    With a request of the partner, the address it called (so the references it
    gets back work for it); otherwise SANDBOX_BASE_URL, else PUBLIC_BASE_URL/sandbox.
    """
    if request is not None:
        return request.build_absolute_uri("/sandbox").rstrip("/")
    configured = settings.SANDBOX_BASE_URL
    return (configured or f"{settings.PUBLIC_BASE_URL}/sandbox").rstrip("/")


def transaction_ref(base_url: str, transaction_id: str) -> str:
    return f"{base_url}/partner/v2/transactions/{transaction_id}"


def event_ref(base_url: str, transaction_id: str, event_id: str) -> str:
    return f"{transaction_ref(base_url, transaction_id)}/events/{event_id}"


def _iso(value) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def origin_document(origin: Origin) -> dict:
    """The Origin object of endpoint #1."""
    user, loan, product = origin.user, origin.loan, origin.product
    instance = loan.instance
    data = product.data
    entitlement = ((data.get("entitlements") or {}).get("data") or {}).get("origin")
    document = {
        "id": origin.origin_id,
        "entityRef": {
            "entityId": urns.loan_urn(instance.instance_id, loan.guid),
            "entityType": urns.loan_entity_type(),
        },
        "loanFormat": formats.LOAN_FORMAT,
        "loan": documents.loan_filtered(loan.data, entitlement),
        "interfaceUrl": data.get("interfaceUrl", ""),
        "product": {"id": product.service_id, "partnerId": data.get("partnerId", ""), "name": product.name},
        "environment": "sandbox",
        "originatingParty": originating_party(instance, user),
    }
    credentials = user.credentials
    if credentials:
        document["credentials"] = credentials
    if origin.transaction_id:
        document["transactionId"] = origin.transaction_id
    return document


def originating_party(instance: Instance, user: LenderUser) -> dict:
    return {
        **{key: instance.address.get(key, "") for key in ("name", "address", "city", "state", "postalCode")},
        "pointOfContact": {
            "name": user.name,
            "role": user.role,
            "email": user.email,
            "phone": user.phone,
            "personas": list(user.personas or []),
        },
    }


def transaction_document(transaction: Transaction, *, with_request_details: bool = True) -> dict:
    """The Transaction object of endpoint #2 (and, without loan and credentials, of the list #7)."""
    request = dict(transaction.request)
    if with_request_details:
        credentials = transaction.credentials_encrypted
        request["credentials"] = json.loads(credentials) if credentials else {}
    else:
        request.pop("loan", None)
    product = transaction.product
    document = {
        "id": transaction.id,
        "status": transaction.status,
        "product": {"id": product.service_id, "name": product.name},
        "entityRef": {
            "entityId": urns.loan_urn(transaction.loan.instance.instance_id, transaction.loan.guid),
            "entityType": urns.loan_entity_type(),
        },
        "request": request,
        "created": _iso(transaction.created_at),
        "updated": _iso(transaction.updated_at),
    }
    if with_request_details:
        response = _response_of(transaction)
        if response is not None:
            document["response"] = response.data
    return document


def _response_of(transaction: Transaction):
    try:
        return transaction.response
    except Transaction.response.RelatedObjectDoesNotExist:
        return None


# Only what the document shows: no product JSON, loan JSON or signing secret to decode.
_TRANSACTION_COLUMNS = (
    "id",
    "status",
    "request",
    "credentials_encrypted",
    "created_at",
    "updated_at",
    "product__service_id",
    "product__name",
    "loan__guid",
    "loan__instance__instance_id",
    "response__data",
)


def transaction_get(*, transaction_id: str) -> Transaction | None:
    try:  # get(), not first(): no ORDER BY on a primary key lookup
        return (
            Transaction.objects.select_related("product", "loan__instance", "response")
            .only(*_TRANSACTION_COLUMNS)
            .get(pk=transaction_id)
        )
    except Transaction.DoesNotExist:
        return None


def event_document(event: Event) -> dict:
    return {
        "id": event.id,
        "type": event.type,
        "transactionId": event.transaction_id,
        "created": _iso(event.created_at),
        **({"details": event.data} if event.data else {}),
    }


def event_get(*, transaction_id: str, event_id: str) -> Event | None:
    return Event.objects.filter(pk=event_id, transaction_id=transaction_id).first()


def transactions_page(*, start: int, limit: int) -> tuple[list[dict], int]:
    total = Transaction.objects.count()
    if limit == 0 or start >= total:
        return [], total
    rows = Transaction.objects.select_related("product", "loan__instance").order_by("created_at", "id")[
        start : start + limit
    ]
    return [transaction_document(row, with_request_details=False) for row in rows], total


def products_page(*, start: int, limit: int) -> tuple[list[dict], int]:
    total = Product.objects.count()
    if limit == 0 or start >= total:
        return [], total
    rows = Product.objects.order_by("created_at", "id")[start : start + limit]
    return [product_document(row) for row in rows], total


def product_document(product: Product) -> dict:
    return {**product.data, "id": product.service_id, "name": product.name}


def product_lookup(value) -> Product:
    """A product given as a model, a name or a service id."""
    if isinstance(value, Product):
        return value
    return Product.objects.filter(name=value).first() or Product.objects.get(service_id=value)


def user_lookup(value) -> LenderUser:
    if isinstance(value, LenderUser):
        return value
    if isinstance(value, int):
        return LenderUser.objects.select_related("instance").get(pk=value)
    return LenderUser.objects.select_related("instance").get(username=value)


def loan_lookup(value) -> Loan:
    if isinstance(value, Loan):
        return value
    if isinstance(value, int):
        return Loan.objects.select_related("instance").get(pk=value)
    return Loan.objects.select_related("instance").get(guid=value)


def patch_summary(patch: ResponsePatch) -> dict:
    """One PATCH of a response as the host page lists it: number, time, status, what the lender read."""
    payload = patch.payload if isinstance(patch.payload, dict) else {}
    resources = [item for item in payload.get("resources") or [] if isinstance(item, dict)]
    return {
        "number": patch.number,
        "created": _iso(patch.created_at),
        "status": payload.get("status", ""),
        "partnerStatus": payload.get("partnerStatus", ""),
        "resources": [item.get("name") or item.get("id", "") for item in resources],
        "loan": sorted(payload["loan"]) if isinstance(payload.get("loan"), dict) else [],
    }


def host_context() -> dict:
    """What the host page offers: users, loans, products and the latest transactions (each with its
    response PATCHes, in order)."""
    users = [
        {
            "id": user.pk,
            "name": user.name,
            "username": user.username,
            "instance": user.instance.instance_id,
            "has_credentials": user.has_credentials,
        }
        for user in LenderUser.objects.select_related("instance").order_by("username")
    ]
    loans = [
        {
            "id": loan.pk,
            "guid": loan.guid,
            "loanNumber": loan.data.get("loanNumber", ""),
            "borrower": loan.borrower,
            "property": loan.subject_property,
        }
        for loan in Loan.objects.order_by("id")
    ]
    products = [
        {"id": product.service_id, "name": product.name, "listingName": product.data.get("listingName", "")}
        for product in Product.objects.order_by("created_at", "id")
    ]
    transactions = [
        {
            "id": row.id,
            "product": row.product.name,
            "loan": row.loan.data.get("loanNumber") or row.loan.guid,
            "loan_id": row.loan_id,
            "user_id": row.user_id,
            "status": row.status,
            "created": _iso(row.created_at),
            "patches": [patch_summary(patch) for patch in row.patches.all()],
        }
        for row in Transaction.objects.select_related("product", "loan")
        .prefetch_related("patches")
        .order_by("-created_at", "-id")[:50]
    ]
    return {"users": users, "loans": loans, "products": products, "transactions": transactions}
