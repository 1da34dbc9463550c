"""The automated fulfillment of one transaction, step by step (spec, "Typical fulfillment sequence").

`order_fulfill` takes the order (a lease, `partner.core.leases`) and runs the steps that
are not yet recorded as done; `order_fulfill_taken` runs them for an order its caller created
taken (the order's first run, in its transaction webhook's task):

1. prepare: GET the transaction, check the initiating user's credentials, run the product's
   fulfiller, store the response and its attachments;
2. request upload slots for the attachments (one POST; on the first run, before step 1 stores
   anything, so both are written together);
3. upload each attachment to its slot (one PUT each);
4. deliver: one PATCH with status, loan data, result and resources.

Each step is recorded when it completes, so a retried or restarted task resumes after the last
one. Transient service errors propagate (the task retries them, `partner.core.retries`);
permanent ones fail the order with a reason a person understands.
"""

import logging

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.models import Product
from partner.catalog.services import product_for_order
from partner.core.leases import lease_kept, lease_release, lease_take_one
from partner.core.logging import log_context
from partner.core.retries import retry_plan
from partner.fulfillment.automated.fulfillers import Fulfillment, FulfillmentRefused, fulfiller_for
from partner.fulfillment.enqueue import order_fulfill_enqueue
from partner.fulfillment.models import (
    ACTIVE_STATUSES,
    FailureCode,
    Order,
    OrderDocument,
    OrderStatus,
)
from partner.fulfillment.orders.metrics import order_delivered
from partner.fulfillment.orders.services import (
    OrderFailed,
    first_time,
    order_fail,
    order_give_up,
    order_retry_scheduled,
    step_record,
    steps_batched,
    transaction_ref,
)
from partner.fulfillment.sending import uploads
from partner.fulfillment.staff import notices
from partner.platform import client
from partner.platform.errors import ResourceOutsideServiceError, ServiceError
from partner.platform.types import Transaction

logger = logging.getLogger(__name__)


def _take(order_id: int) -> Order | None:
    """Take the order for this worker, or None when it is finished or another worker holds it."""
    return lease_take_one(
        Order.objects.filter(pk=order_id, status__in=ACTIVE_STATUSES),
        attempts=F("attempts") + 1,
        next_attempt_at=None,
    )


def order_fulfill(*, order_id: int) -> Order | None:
    """Run every step not yet done. Returns the order as the run left it, or None when there was
    nothing to do."""
    order = _take(order_id)
    if order is None:
        return None
    with log_context(order_id=order.pk, transaction_id=order.transaction_id):  # its failure's lines too
        return _taken_fulfill(order)


def order_fulfill_taken(order: Order) -> Order:
    """Run the steps of an order the caller created taken (`order_open(work_here=True)`): the
    transaction webhook's own task does the order's first run, so an order needs no task and no
    take of its own. What a task run would retry (a transient error) goes to the fulfillment task,
    after the wait the service asked for or a backoff (`partner.core.retries`; this first run is not
    one of that task's counted runs); an unexpected error fails the order, as a task's does."""
    with log_context(order_id=order.pk, transaction_id=order.transaction_id):
        try:
            return _taken_fulfill(order)
        except ServiceError as exc:  # transient: the permanent ones failed the order
            plan = retry_plan(exc, retries=0)
            order_retry_scheduled(order_id=order.pk, countdown=plan.countdown, error=str(exc))
            order_fulfill_enqueue(order.pk, countdown=plan.countdown, rate_limited_since=plan.rate_limited_since)
        except Exception as exc:
            logger.exception("transaction %s: the first run stopped on an error", order.transaction_id)
            order_give_up(order_id=order.pk, error=f"{type(exc).__name__}: {exc}")
    return order


def _taken_fulfill(order: Order) -> Order:
    """The run of a taken order: its steps, written at its end (one INSERT); the lease released by
    the delivering UPDATE itself, or else at the end. A run that delivered knows where the order
    stands without reading it again."""
    released = False  # by the delivering UPDATE, or by the one that records a transient error
    try:
        with steps_batched(), lease_kept(Order.objects.filter(pk=order.pk)):
            released = _steps_run(order)
    except OrderFailed as failure:
        order_fail(order=order, code=failure.code, reason=failure.reason, tell_lender=failure.tell_lender)
    except ServiceError as exc:
        if exc.transient:  # the lease given back with the error, in one UPDATE: the task comes back
            released = bool(lease_release(Order.objects.filter(pk=order.pk), last_error=str(exc)[:2000]))
            raise
        Order.objects.filter(pk=order.pk).update(last_error=str(exc)[:2000])
        order_fail(
            order=order,
            code=FailureCode.SERVICE_REJECTED,
            reason=f"The service refused {exc.method} {_path(exc.url)} with status {exc.status}",
        )
    finally:
        if not released:
            lease_release(Order.objects.filter(pk=order.pk))
    if not released:
        order.refresh_from_db()
    return order


def _steps_run(order: Order) -> bool:
    """Every step not yet done; True when this run delivered (and so released the lease)."""
    attachments = _prepare(order) if order.prepared_at is None else None
    if order.staff_worked:
        _acknowledge(order)  # the rest is the staff's work
        return False
    if attachments is None:  # prepared by an earlier run: its documents are read back
        attachments = list(order.attachments.all())
    if attachments and order.slots_requested_at is None:
        _upload_slots_request(order, attachments)
    for attachment in attachments:
        if attachment.uploaded_at is None:
            uploads.attachment_upload(order, attachment)
    if order.delivered_at is None:
        _deliver(order, attachments)
        return True
    return False


def _path(url: str) -> str:
    return url.removeprefix(settings.SVC_BASE_URL) if url else ""


def _transaction_read(order: Order) -> Transaction:
    """GET the transaction, after checking that the notification's reference names it on the service."""
    try:
        ref = client.resource_ref_parse(order.resource_ref or transaction_ref(order.transaction_id))
    except ResourceOutsideServiceError:
        raise OrderFailed(
            FailureCode.RESOURCE_OUTSIDE_SERVICE, "The notification's resource reference is not on the service"
        ) from None
    if ref.transaction_id != order.transaction_id:
        raise OrderFailed(FailureCode.RESOURCE_OUTSIDE_SERVICE, "The resource reference names another transaction")
    return client.get_transaction(order.transaction_id)


def _product(order: Order, txn: Transaction) -> Product:
    """The product the service's transaction record names: never the notification's word for it.

    A notification's product name (meta.instanceId) is only used when the record names none; when
    the two differ, the record wins and the difference is recorded for staff.
    """
    named = txn.raw.get("product") if isinstance(txn.raw.get("product"), dict) else {}
    service_id, record_name = str(named.get("id") or ""), str(named.get("name") or "")
    if record_name and order.product_name and record_name != order.product_name:
        step_record(order, "product_mismatch", f"notification named {order.product_name!r}, record {record_name!r}")
        logger.warning(
            "transaction %s: the notification named product %r, the transaction record %r (the record wins)",
            order.transaction_id,
            order.product_name,
            record_name,
        )
    product_name = record_name or order.product_name
    try:
        return product_for_order(service_id=service_id or None, name=product_name or None)
    except (ProductNotFound, ValueError):
        raise OrderFailed(FailureCode.PRODUCT_UNKNOWN, f"Product {product_name!r} is not configured") from None
    except ProductSyncError as exc:
        # Pulling the product hit the service: retry what is transient, fail what is not.
        if isinstance(exc.__cause__, ServiceError):
            raise exc.__cause__ from None
        raise


# What preparing writes on the order; and, when the slots were asked for first, what they add.
PREPARED_FIELDS = [
    "response",
    "findings",
    "reference_number",
    "product_name",
    "ordered_by",
    "request_type",
    "prepared_at",
    "status",
    "request",
    "loan_number",
    "staff_worked",
    "due_at",
    "updated_at",
]
SLOTTED_FIELDS = ["slots_requested_at", "resource_id"]


def _prepare(order: Order) -> list[OrderDocument]:
    """Read the transaction, check the lender, do the work; store the response and its documents
    (which it returns) and mark the order prepared, in one transaction.

    An automated order's upload slots are asked for before that transaction, so that the documents
    are stored with their slots and the order marked prepared and slotted in one write. When the
    slot request fails, what was prepared is stored all the same: the next run starts from it.
    """
    txn = _transaction_read(order)
    request = txn.request or {}
    product = _product(order, txn)

    # Headless and interface orders authenticate the same way: the initiating user's credentials.
    check = credentials_check(product=product, credentials=request.get("credentials") or {})
    if not check.ok:
        raise OrderFailed(FailureCode.CREDENTIALS_INVALID, check.message, tell_lender=True)

    try:
        fulfillment = fulfiller_for(product.fulfiller).fulfill(
            transaction_id=order.transaction_id, request=request, product=product.raw or {}
        )
    except FulfillmentRefused as refusal:
        # Refused for the lender's data (theirs to correct), or for the product's setup (ours).
        code = FailureCode.ORDER_REFUSED if refusal.tell_lender else FailureCode.SETUP_INCOMPLETE
        raise OrderFailed(code, refusal.reason, tell_lender=refusal.tell_lender) from None

    order.ordered_by = check.account
    slots = None
    if fulfillment.final and fulfillment.attachments:
        try:
            slots = uploads.slots_get(order, [(a.name, a.mime_type) for a in fulfillment.attachments])
        except (ServiceError, OrderFailed):
            _prepared_save(order, fulfillment, product=product, request=request, slots=None)
            raise
    return _prepared_save(order, fulfillment, product=product, request=request, slots=slots)


def _prepared_save(
    order: Order, fulfillment: Fulfillment, *, product: Product, request: dict, slots: list | None
) -> list[OrderDocument]:
    fields = PREPARED_FIELDS + (SLOTTED_FIELDS if slots else [])
    with transaction.atomic():
        attachments = _prepared_store(order, fulfillment, product=product, request=request, slots=slots)
        order.save(update_fields=fields)
        step_record(order, "prepared", f"fulfiller {product.fulfiller}, {len(fulfillment.attachments)} attachment(s)")
        if slots:
            step_record(order, "slots_requested", ", ".join(a.resource_id for a in attachments))
    return attachments


def _prepared_store(
    order: Order, fulfillment: Fulfillment, *, product: Product, request: dict, slots: list | None
) -> list[OrderDocument]:
    documents = []
    for position, attachment in enumerate(fulfillment.attachments):
        document = OrderDocument(order=order, position=position, name=attachment.name, mime_type=attachment.mime_type)
        document.size = len(attachment.content)
        document.file.save(attachment.name, ContentFile(attachment.content), save=False)
        if slots:
            uploads.slot_assign(document, slots[position])
        document.save()
        documents.append(document)
    if slots:
        _slotted(order, documents)
    order.response = fulfillment.response
    order.findings = fulfillment.findings
    order.reference_number = str(fulfillment.response.get("referenceNumber", ""))[:100]
    order.product_name = product.name
    order.request_type = str(request.get("type", ""))[:50]
    order.prepared_at = timezone.now()
    order.status = OrderStatus.IN_PROGRESS
    # The order as the lender sent it, for the staff who work it: never the lender's credentials.
    order.request = {key: value for key, value in request.items() if key != "credentials"}
    loan = request.get("loan") if isinstance(request.get("loan"), dict) else {}
    order.loan_number = str(loan.get("loanNumber") or "")[:100]
    order.staff_worked = not fulfillment.final
    order.due_at = notices.due_at(product, order.created_at) if order.staff_worked else None
    return documents


def _slotted(order: Order, attachments: list[OrderDocument]) -> None:
    order.slots_requested_at = timezone.now()
    # Known from here on: the processed callback may complete the order before the PATCH returns.
    order.resource_id = attachments[0].resource_id if attachments else ""


def _upload_slots_request(order: Order, attachments: list[OrderDocument]) -> None:
    def recorded():
        _slotted(order, attachments)
        order.save(update_fields=[*SLOTTED_FIELDS, "updated_at"])

    uploads.slots_request(order, attachments, recorded=recorded)


def response_payload(order: Order, attachments: list[OrderDocument]) -> dict:
    """The PATCH body: the fulfiller's response, and the uploaded attachments as `resources`."""
    payload = dict(order.response or {})
    if attachments:
        payload["resources"] = uploads.resources(attachments)
    return payload


def _acknowledge(order: Order) -> None:
    """A staff-worked order: the acknowledgement PATCH, then the order is with staff (told by e-mail)."""
    client.patch_response(order.transaction_id, dict(order.response or {}))
    now = timezone.now()
    with transaction.atomic():
        moved = Order.objects.filter(pk=order.pk, status__in=ACTIVE_STATUSES).update(
            status=OrderStatus.WITH_STAFF, updated_at=now
        )
        if moved:
            notices.acknowledgement_record(order, response=order.response or {}, now=now)
    logger.info("transaction %s: acknowledged, with staff", order.transaction_id)


def _deliver(order: Order, attachments: list[OrderDocument]) -> None:
    client.patch_response(order.transaction_id, response_payload(order, attachments))
    now = timezone.now()
    resource_id = attachments[0].resource_id if attachments else ""
    # The processed callback may have completed the order already (and set delivered_at):
    # never move it back.
    # One UPDATE: a worker killed between the delivery time and the state would leave an order
    # that skips the delivery on resume and never says it was delivered.
    # The lease is released in the same UPDATE: nothing is left for this run to write but its steps.
    Order.objects.filter(pk=order.pk).update(
        delivered_at=first_time("delivered_at", now),
        resource_id=resource_id,
        status=Case(When(status__in=ACTIVE_STATUSES, then=Value(OrderStatus.RESPONSE_DELIVERED)), default=F("status")),
        claimed_until=None,
        updated_at=now,
    )
    # The same, in memory (the callback may have completed it meanwhile: that run's status stands).
    order.delivered_at = order.delivered_at or now
    order.resource_id, order.claimed_until, order.updated_at = resource_id, None, now
    if order.status in ACTIVE_STATUSES:
        order.status = OrderStatus.RESPONSE_DELIVERED
    order_delivered(order, now)
    step_record(order, "delivered", f"{len(attachments)} resource(s)")
    logger.info("transaction %s: response delivered", order.transaction_id)
