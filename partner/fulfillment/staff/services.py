"""The staff's work on a staff-worked order: take it, tell the lender, attach documents, deliver, decline.

Every rule of a staff action lives here, called by the admin's pages (thin views) and by tests
directly. An action that sends something to the service is stored first, as a `Delivery`, and
sent by a worker after the transaction commits (`partner.fulfillment.sending.sender`): a refused
action changes nothing, an accepted one is never lost and never sent twice.

Rules:
- a staff member acts on an order they have taken; two people never work one order without
  knowing it (taking an order someone holds is refused unless they say they take it over);
- actions are open while the order is with staff and no final delivery or decline was made;
- a status update is text for the lender (partnerStatus), at most 500 characters;
- documents are PDF, PNG or JPEG (told by their first bytes, not their name), at most
  DOCUMENT_MAX_BYTES; they wait on the order until a delivery takes them, and may be removed
  until then;
- a delivery carries only the loan fields the product's response data entitlement allows, each
  as its form describes it (`partner.catalog.response_forms`: the product's response form, else the
  seed's), and an action result only for a product that holds the action.
"""

import logging
import re

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from partner.catalog import response_forms
from partner.catalog.models import Product
from partner.catalog.product_cache import catalog_product
from partner.core.errors import ApplicationError
from partner.fulfillment.enqueue import order_run_enqueue
from partner.fulfillment.models import (
    Delivery,
    DeliveryKind,
    DeliveryState,
    Order,
    OrderDocument,
    OrderStatus,
)
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.orders.services import order_assign
from partner.fulfillment.orders.states import delivery_move
from partner.platform import formats
from partner.platform.loan_labels import loan_field_label

logger = logging.getLogger(__name__)

PARTNER_STATUS_MAX = 500
DECLINE_REASON_MAX = 400
DECLINE_PREFIX = "Order declined: "  # what the lender reads before the reason
# What staff may attach: told by the file's first bytes.
DOCUMENT_KINDS = {
    b"%PDF-": "application/pdf",
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
}
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")


class StaffActionRefused(ApplicationError):
    """A staff action (or a partner system's answer, made as one) that breaks a rule of the order:
    `message` says which, for the person who tried it. A well-formed request a rule refused: 422."""

    status_code = 422
    slug = "answer-refused"
    title = "The answer breaks a rule of the order"


def _actor(user) -> str:
    return user.get_username() if user is not None else ""


def _text(value, *, what: str, limit: int) -> str:
    text = (value or "").strip()
    if not text:
        raise StaffActionRefused(f"The {what} is empty.")
    if len(text) > limit:
        raise StaffActionRefused(f"The {what} is {len(text)} characters long; at most {limit} are sent.")
    if _CONTROL.search(text):
        raise StaffActionRefused(f"The {what} holds a control character.")
    return text


def _open_order(order_id: int, user) -> Order:
    """The order, locked, when `user` may act on it now; StaffActionRefused otherwise."""
    order = Order.objects.select_for_update().filter(pk=order_id).first()
    if order is None or not order.staff_worked:
        raise StaffActionRefused("This is not a staff-worked order.")
    if order.status != OrderStatus.WITH_STAFF:
        raise StaffActionRefused(f"The order is {order.status_phrase}: nothing more can be sent.")
    final = order.deliveries.filter(kind__in=[DeliveryKind.FINAL, DeliveryKind.DECLINE])
    if final.exclude(state=DeliveryState.FAILED).exists():
        raise StaffActionRefused("The final delivery or the decline is already made.")
    if order.assigned_to_id != user.pk:
        holder = order.assigned_to.get_username() if order.assigned_to else None
        raise StaffActionRefused(
            f"{holder} works this order: take it over first." if holder else "Take the order first."
        )
    return order


# The take ----------------------------------------------------------------------------------------


def order_take(*, order_id: int, user, take_over: bool = False) -> Order:
    """`user` works the order from now on. Someone else's order only with `take_over` (recorded)."""
    with transaction.atomic():
        order = Order.objects.select_for_update(of=("self",)).select_related("assigned_to").filter(pk=order_id).first()
        if order is None or not order.staff_worked:
            raise StaffActionRefused("This is not a staff-worked order.")
        if order.assigned_to_id == user.pk:
            return order
        previous = order.assigned_to.get_username() if order.assigned_to else ""
        if previous and not take_over:
            raise StaffActionRefused(f"{previous} works this order (since {order.assigned_at:%Y-%m-%d %H:%M} UTC).")
        order_assign(order=order, user=user)  # the row is locked above: always written
    return order


def order_release(*, order_id: int, user) -> None:
    """`user` stops working the order: anyone may take it."""
    with transaction.atomic():
        order = Order.objects.select_for_update().filter(pk=order_id, assigned_to=user).first()
        if order is None:
            raise StaffActionRefused("You do not work this order.")
        order.assigned_to, order.assigned_at = None, None
        order.save(update_fields=["assigned_to", "assigned_at", "updated_at"])
        step_record(order, "released", actor=_actor(user))


# Documents ---------------------------------------------------------------------------------------


def document_kind(head: bytes) -> str | None:
    """The media type of a document from its first bytes, or None when it is not one we take."""
    return next((mime for magic, mime in DOCUMENT_KINDS.items() if head.startswith(magic)), None)


def _document_name(name: str, mime_type: str) -> str:
    stem = _UNSAFE_NAME.sub("-", (name or "").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip(" .-")[:120]
    extension = {"application/pdf": ".pdf", "image/png": ".png", "image/jpeg": ".jpg"}[mime_type]
    stem = stem or "document"
    return stem if stem.lower().endswith((extension, ".jpeg")) else stem + extension


def document_attach(*, order_id: int, upload, user) -> OrderDocument:
    """Attach an uploaded file (a Django UploadedFile or any file with `name`, `size`, `read`)."""
    size = getattr(upload, "size", None)
    if not size:
        raise StaffActionRefused("The file is empty.")
    if size > settings.DOCUMENT_MAX_BYTES:
        limit = settings.DOCUMENT_MAX_BYTES // (1024 * 1024)
        raise StaffActionRefused(f"The file is {size / 1024 / 1024:.1f} MB; at most {limit} MB may be attached.")
    upload.seek(0)
    mime_type = document_kind(upload.read(16))
    upload.seek(0)
    if mime_type is None:
        raise StaffActionRefused("Only PDF, PNG and JPEG documents can be attached (this file is none of them).")
    with transaction.atomic():
        order = _open_order(order_id, user)
        last = order.attachments.aggregate(last=Max("position"))["last"]
        position = 0 if last is None else last + 1
        name = _document_name(getattr(upload, "name", ""), mime_type)
        document = OrderDocument(
            order=order,
            position=position,
            name=name,
            mime_type=mime_type,
            size=size,
            added_by=_actor(user),
            added_at=timezone.now(),
        )
        document.file.save(name, upload, save=False)
        document.save()
        step_record(order, "document_attached", f"{name} ({size} bytes)", actor=_actor(user))
    return document


def document_remove(*, attachment_id: int, user) -> None:
    """Remove a document no delivery has taken yet; its file goes too."""
    with transaction.atomic():
        document = OrderDocument.objects.select_related("order").filter(pk=attachment_id).first()
        if document is None:
            raise StaffActionRefused("No such document.")
        _open_order(document.order_id, user)
        if document.delivery_id is not None:
            raise StaffActionRefused("This document was delivered: it cannot be removed.")
        name = document.file.name
        document.delete()
        step_record(document.order, "document_removed", document.name, actor=_actor(user))
        if name:
            transaction.on_commit(lambda: document.file.storage.delete(name))


def document_replace(*, attachment_id: int, upload, user) -> OrderDocument:
    """Replace a waiting document by another file: the old one removed and the new one attached
    together, or neither (the rules of `document_remove` and `document_attach`)."""
    with transaction.atomic():
        document = OrderDocument.objects.filter(pk=attachment_id).first()
        if document is None:
            raise StaffActionRefused("No such document.")
        document_remove(attachment_id=attachment_id, user=user)
        return document_attach(order_id=document.order_id, upload=upload, user=user)


def documents_waiting(order: Order) -> list[OrderDocument]:
    """The order's documents no delivery has taken yet."""
    return list(order.attachments.filter(delivery__isnull=True).order_by("position"))


# What is sent ------------------------------------------------------------------------------------

_PRODUCT_READ = "_staff_product"  # where `order_product` keeps the product on the order object


def order_product(order: Order) -> Product | None:
    """The order's product, as the catalog kept in the shared cache holds it (no query; how it stays
    fresh: partner/catalog/product_cache.py), read once per order object: the page, its delivery form
    and the delivery's checks all read the same product within one request. For reading only."""
    if _PRODUCT_READ not in order.__dict__:
        name = order.product_name
        order.__dict__[_PRODUCT_READ] = catalog_product(service_id=None, name=name) if name else None
    return order.__dict__[_PRODUCT_READ]


def loan_fields_allowed(order: Order) -> list[str] | None:
    """The loan fields a delivery of this order may carry (None: the product names none)."""
    product = order_product(order)
    raw = product.raw if product is not None else {}
    return formats.response_loan_fields(raw, request_type=order.request_type or "NEW_REQUEST")


def loan_field_schemas(order: Order) -> dict[str, dict | None]:
    """Each loan field a delivery of this order may carry, with the form that describes it (the
    product's response form, else the seed's; None: nothing describes it, so staff cannot send it)."""
    product = order_product(order)
    form = product.response_form if product is not None else None
    return response_forms.loan_field_schemas(form, loan_fields_allowed(order))


def loan_problems(order: Order, loan: dict) -> list[str]:
    """Why `loan` cannot be delivered for this order: a field the product may not send, or one whose
    values its form refuses (checked again here, whatever drew the form)."""
    if not isinstance(loan, dict):
        return ["The loan data must be an object."]
    allowed = loan_fields_allowed(order)
    schemas = loan_field_schemas(order)
    problems = []
    for name, value in loan.items():
        if allowed is not None and name not in allowed:
            problems.append(f"The product may not send {loan_field_label(name)} (loan.{name}).")
        elif not isinstance(value, dict):
            problems.append(f"{loan_field_label(name)} (loan.{name}) must be an object.")
        elif schemas.get(name) is not None:  # a field no form describes is checked by its shape only
            problems += response_forms.loan_field_problems(name, schemas[name], value)
    return problems


def result_problems(order: Order, result: dict | None) -> list[str]:
    if result is None:
        return []
    problems = [f"{v.field}: {v.message}" for v in formats.disclosure_result_violations(result)]
    if problems:
        return problems
    product = order_product(order)
    if not formats.action_entitled(
        product.raw if product else {},
        action=result["action"],
        request_type=order.request_type or "NEW_REQUEST",
        fmt=result["format"],
    ):
        return [f"The product does not hold the {result['action']} action for this request type."]
    return []


def _delivery_store(order: Order, *, kind: str, user, **fields) -> Delivery:
    delivery = Delivery.objects.create(order=order, kind=kind, created_by=_actor(user), **fields)
    order_run_enqueue(order.pk)
    return delivery


def status_update_post(*, order_id: int, text: str, user) -> Delivery:
    """Tell the lender where the order stands (partnerStatus); sent by a worker."""
    text = _text(text, what="status update", limit=PARTNER_STATUS_MAX)
    with transaction.atomic():
        order = _open_order(order_id, user)
        delivery = _delivery_store(order, kind=DeliveryKind.STATUS_UPDATE, user=user, partner_status=text)
        step_record(order, "status_update_posted", text, actor=_actor(user))
    return delivery


def delivery_request(
    *,
    order_id: int,
    final: bool,
    user,
    partner_status: str = "",
    loan: dict | None = None,
    result=None,
    document_ids: list[int] | None = None,
) -> Delivery:
    """Deliver the waiting documents, the loan fields and a result: `processing` (partial) or
    `completed` (final: the order is done once the service confirms it). `document_ids` names the
    waiting documents to deliver (the API's callers name them); None delivers every waiting one. The
    delivery returned says how many documents it took (`documents_delivered`)."""
    loan = loan or {}
    partner_status = partner_status.strip()
    if partner_status:
        partner_status = _text(partner_status, what="status for the lender", limit=PARTNER_STATUS_MAX)
    with transaction.atomic():
        order = _open_order(order_id, user)
        problems = loan_problems(order, loan) + result_problems(order, result)
        if problems:
            raise StaffActionRefused(" ".join(problems))
        documents = documents_waiting(order)
        if document_ids is not None:
            unknown = sorted(set(document_ids) - {d.pk for d in documents})
            if unknown:
                raise StaffActionRefused(f"No waiting document of this order has the id {unknown[0]}.")
            documents = [d for d in documents if d.pk in set(document_ids)]
        if not final and not (documents or loan or result or partner_status):
            raise StaffActionRefused("A partial delivery needs something to deliver: a document, data or a status.")
        kind = DeliveryKind.FINAL if final else DeliveryKind.PARTIAL
        delivery = _delivery_store(order, kind=kind, user=user, partner_status=partner_status, loan=loan, result=result)
        OrderDocument.objects.filter(pk__in=[d.pk for d in documents]).update(delivery=delivery)
        delivery.documents_delivered = len(documents)  # for the caller's message, without counting again
        detail = f"{len(documents)} document(s)" + (", loan " + ", ".join(sorted(loan)) if loan else "")
        step_record(order, "final_requested" if final else "partial_requested", detail, actor=_actor(user))
    return delivery


def order_decline(*, order_id: int, reason: str, user) -> Delivery:
    """Decline the order with a reason the lender reads; it ends once the decline is sent."""
    reason = _text(reason, what="reason", limit=DECLINE_REASON_MAX)
    with transaction.atomic():
        order = _open_order(order_id, user)
        delivery = _delivery_store(
            order, kind=DeliveryKind.DECLINE, user=user, partner_status=f"{DECLINE_PREFIX}{reason}"
        )
        step_record(order, "decline_requested", reason, actor=_actor(user))
    return delivery


def delivery_retry(*, delivery_id: int, user) -> Delivery:
    """Send a failed delivery again (after the cause was fixed: an entitlement, the service back)."""
    with transaction.atomic():
        delivery = Delivery.objects.select_related("order").filter(pk=delivery_id).first()
        if delivery is None or delivery.state != DeliveryState.FAILED:
            raise StaffActionRefused("Only a failed delivery can be sent again.")
        order = Order.objects.select_for_update().get(pk=delivery.order_id)
        if order.status != OrderStatus.WITH_STAFF:
            raise StaffActionRefused(f"The order is {order.status_phrase}: nothing more can be sent.")
        if order.assigned_to_id != user.pk:
            raise StaffActionRefused("Take the order first.")
        delivery_move(Delivery.objects.filter(pk=delivery.pk), DeliveryState.PENDING, failed_at=None, failure_reason="")
        order_run_enqueue(order.pk)
        step_record(order, "delivery_retry", delivery.get_kind_display(), actor=_actor(user))
    return delivery
