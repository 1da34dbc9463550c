"""The automated work on one order: read the transaction, check the lender, do the work, store it.

`order_prepare` is the first step of an order's run (`partner.fulfillment.runs`): it GETs the
transaction, checks that the notification's reference names it and which product the service's
record names, checks the initiating user's credentials (headless and interface orders alike), runs
the product's fulfiller, and stores what it made in one transaction: the response, its documents,
and the delivery that sends them (`Delivery`: the result of an automated order, the acknowledgement
of a staff-worked one). Sending it is the sender's (`partner.fulfillment.sending.sender`), in the
same run.

A permanent refusal raises OrderFailed with a reason a person understands (and says whether the
lender can act on it); a transient service error propagates, and the run is retried.
"""

import logging

from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.models import Product
from partner.catalog.services import product_for_order
from partner.core.leases import Lease
from partner.fulfillment.automated.fulfillers import Fulfillment, FulfillmentRefused, fulfiller_for
from partner.fulfillment.models import Delivery, DeliveryKind, FailureCode, Order, OrderDocument, OrderStatus
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.orders.services import PARTNER_STATUS_MAX, OrderFailed, due_at, transaction_ref
from partner.fulfillment.orders.states import MoveNotAllowed, order_move
from partner.platform import client
from partner.platform.errors import RequestRefused, ResourceOutsideServiceError, ServiceError
from partner.platform.types import Transaction

logger = logging.getLogger(__name__)


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
        # Pulling the product hit the service (or was refused before it): retry what is transient, fail
        # what is not, as the run does for any call.
        if isinstance(exc.__cause__, ServiceError | RequestRefused):
            raise exc.__cause__ from None
        raise


# What preparing writes on the order.
PREPARED_FIELDS = [
    "response",
    "findings",
    "reference_number",
    "product_name",
    "ordered_by",
    "request_type",
    "prepared_at",
    "request",
    "loan_number",
    "staff_worked",
    "due_at",
    "updated_at",
]


def order_prepare(order: Order, lease: Lease) -> tuple[Delivery, list[OrderDocument]]:
    """Read the transaction, check the lender, do the work; store the response, its documents and
    the delivery that sends them, and mark the order prepared (IN_PROGRESS), in one transaction
    fenced by the order's lease (`lease`, the run's): its first statement confirms the lease and
    locks the order's row, so a worker whose lease ran out during the work stores nothing (LeaseLost)
    and no other worker can take the order until this one's prepared order is committed.
    Returns that delivery and the documents it sends."""
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
        raise OrderFailed(code, refusal.message, tell_lender=refusal.tell_lender) from None

    order.ordered_by = check.account
    with transaction.atomic():
        lease.confirm_with(Order.objects.filter(pk=order.pk), updated_at=timezone.now())
        delivery = _prepared_store(order, fulfillment, product=product, request=request)
        prepared = {field: getattr(order, field) for field in PREPARED_FIELDS}
        if not order_move(Order.objects.filter(pk=order.pk), OrderStatus.IN_PROGRESS, **prepared):
            raise MoveNotAllowed("an order", order.status, OrderStatus.IN_PROGRESS)
        step_record(order, "prepared", f"fulfiller {product.fulfiller}, {len(fulfillment.attachments)} attachment(s)")
    return delivery


def _prepared_store(
    order: Order, fulfillment: Fulfillment, *, product: Product, request: dict
) -> tuple[Delivery, list[OrderDocument]]:
    order.response = fulfillment.response
    order.findings = fulfillment.findings
    order.reference_number = str(fulfillment.response.get("referenceNumber", ""))[:100]
    order.product_name = product.name
    order.request_type = str(request.get("type", ""))[:50]
    order.prepared_at = order.updated_at = timezone.now()
    # The order as the lender sent it, for the staff who work it: never the lender's credentials.
    order.request = {key: value for key, value in request.items() if key != "credentials"}
    loan = request.get("loan") if isinstance(request.get("loan"), dict) else {}
    order.loan_number = str(loan.get("loanNumber") or "")[:100]
    order.staff_worked = not fulfillment.final
    order.due_at = due_at(product, order.created_at) if order.staff_worked else None
    # The response goes out as the order's first delivery: the result, or a staff-worked order's
    # acknowledgement (its documents, if any, wait for the staff's deliveries).
    delivery = Delivery.objects.create(
        order=order,
        kind=DeliveryKind.RESULT if fulfillment.final else DeliveryKind.ACKNOWLEDGEMENT,
        partner_status=str(fulfillment.response.get("partnerStatus", ""))[:PARTNER_STATUS_MAX],
    )
    documents = []
    for position, attachment in enumerate(fulfillment.attachments):
        document = OrderDocument(
            order=order,
            delivery=delivery if fulfillment.final else None,
            position=position,
            name=attachment.name,
            mime_type=attachment.mime_type,
            size=len(attachment.content),
        )
        document.file.save(attachment.name, ContentFile(attachment.content), save=False)
        documents.append(document)
    OrderDocument.objects.bulk_create(documents)
    return delivery, documents if fulfillment.final else []
