"""Transactions of the sandbox and what follows them: the lender's request, the partner's response, events.

A new transaction is announced by its `created` webhook after commit; a response
PATCH that is processed adds an event, announced the same way. `resources` of a
response must come from an uploaded slot of the same transaction (see `uploads`).
"""

import json

from django.db import transaction as db_transaction
from django.utils import timezone

from partner.platform import formats, urns

from . import documents, webhooks
from .errors import refused
from .models import Event, Origin, Response, ResponsePatch, Transaction, UploadSlot
from .origins import access_check
from .selectors import event_ref, loan_lookup, product_lookup, sandbox_base_url, transaction_ref, user_lookup


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
    access_check(product, user.instance)
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


# Responses and events
# ------------------------------------------------------------------------------
def _merge_resources(current: list, incoming: list) -> list:
    """Resources accumulate: a PATCH adds attachments (same id: replaced), it never drops earlier ones."""
    merged = {item["id"]: item for item in current if isinstance(item, dict) and "id" in item}
    for item in incoming:
        merged[item["id"]] = item
    return list(merged.values())


def _resources_check(transaction: Transaction, resources: list) -> list[dict]:
    # What the rules read of each slot: not its uploaded bytes.
    found = UploadSlot.objects.filter(transaction=transaction, id__in=[r["id"] for r in resources])
    slots = {slot.id: slot for slot in found.only("id", "name", "mime_type", "uploaded_at")}
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

    Every accepted PATCH is a response delivered, and "processed" once merged: an event of type
    ...:response:processed (its details name the response version, the PATCH's number) and its
    `created` webhook. A staff-worked order's acknowledgement, status updates and partial
    deliveries are each confirmed so, as is the final response. Each PATCH is also kept as it came
    (`ResponsePatch`, numbered by the version it made) for the admin and the host page to show.
    """
    base = (base_url or sandbox_base_url()).rstrip("/")
    with db_transaction.atomic():
        # The transaction's row locked (not its product's: PATCHes of different transactions of one
        # product do not wait for each other), with what the rules and the webhook read: not the
        # lender's credentials nor the product's signing secret, which would be decrypted for nothing.
        transaction = (
            Transaction.objects.select_for_update(of=("self",))
            .select_related("product")
            .only("id", "status", "request", "product", "product__name", "product__data")
            .filter(pk=transaction_id)
            .first()
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
        # The transaction's lock serialises its PATCHes: the first one creates the response without
        # the savepoint get_or_create would take against a concurrent creator.
        response = Response.objects.filter(transaction=transaction).first() or Response(transaction=transaction)
        incoming = {key: value for key, value in payload.items() if key != "resources"}
        merged = documents.merge_patch(response.data, incoming)
        if "resources" in payload:
            merged["resources"] = _merge_resources(response.data.get("resources") or [], payload["resources"])
        response.data = merged
        response.patch_count += 1
        response.processed_count += 1
        response.save()
        ResponsePatch.objects.create(transaction=transaction, number=response.patch_count, payload=payload)
        if isinstance(merged.get("status"), str) and merged["status"] != transaction.status:
            Transaction.objects.filter(pk=transaction.pk).update(
                status=merged["status"][:50], updated_at=timezone.now()
            )
        event_create(
            transaction=transaction,
            type=urns.response_processed_event_type(),
            base_url=base,
            data={"responseVersion": response.patch_count},
        )
    return response


def event_create(*, transaction: Transaction, type: str, base_url: str | None = None, data=None) -> Event:
    """A transaction event and its webhook (resource type `urns.event_resource_type()`, event `created`)."""
    base = (base_url or sandbox_base_url()).rstrip("/")
    event = Event.objects.create(transaction=transaction, type=type, data=data or {})
    webhooks.delivery_create(
        product=transaction.product,
        resource_type=urns.event_resource_type(),
        resource_id=event.id,
        resource_ref=event_ref(base, transaction.id, event.id),
    )
    return event
