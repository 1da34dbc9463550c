"""What of an order reached the service: the reads behind the lender's view of it.

A staff-worked order's deliveries count once the service took them (sent, or confirmed by its
"processed" callback); a delivery still waiting, or refused for good, never reached the lender and is
not shown (nor is a failure notice: the lender's view says why an order failed in its own words). An
automated order has one response, its result: it counts once delivered, with its documents.
Documents are shown and downloaded by the same rule, so the lender never reads a document staff
attached and have not delivered.
"""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from partner.fulfillment.models import DeliveryKind, DeliveryState, Order, OrderDocument, OrderStatus

DELIVERED_STATES = (DeliveryState.SENT, DeliveryState.CONFIRMED)
RESPONSE_DELIVERED_STATUSES = (OrderStatus.RESPONSE_DELIVERED, OrderStatus.REQUEST_COMPLETED)
# What a document row needs for the lender: never its upload authorization (a credential, decrypted on load).
DOCUMENT_FIELDS = ("id", "order_id", "delivery_id", "position", "name", "mime_type", "size", "file", "resource_id")


def response_delivered(order: Order) -> bool:
    """An automated order whose one response the service took."""
    if order.staff_worked:
        return False
    return order.delivered_at is not None or order.status in RESPONSE_DELIVERED_STATUSES


@dataclass(frozen=True)
class DeliveredDocument:
    """A document of a delivery that reached the lender, as the lender's view lists it."""

    pk: int
    name: str
    mime_type: str
    size: int
    file: str  # its stored name; empty once retention removed the file
    resource_id: str


@dataclass(frozen=True)
class DeliveredEntry:
    """A staff delivery that reached the lender, with its documents by position."""

    pk: int
    kind: str
    partner_status: str
    sent_at: datetime
    documents: tuple[DeliveredDocument, ...]
    loan: dict  # the loan fields it carried (the response form's values)


_ENTRY_FIELDS = ("id", "kind", "partner_status", "sent_at", "updated_at", "loan")
_DOCUMENT_COLUMNS = ("id", "name", "mime_type", "size", "file", "resource_id")
_JOINED_DOCUMENT_FIELDS = tuple(f"attachments__{name}" for name in _DOCUMENT_COLUMNS)


def deliveries_delivered(order: Order) -> list[DeliveredEntry]:
    """A staff-worked order's deliveries the service took, in the order it took them, each with its
    documents: one query (deliveries joined with their documents), however many there are."""
    rows = (
        order.deliveries.filter(state__in=DELIVERED_STATES)
        .exclude(kind__in=[DeliveryKind.RESULT, DeliveryKind.FAILURE_NOTICE])
        .order_by("sequence", "sent_at", "id", "attachments__position")
        .values_list(*_ENTRY_FIELDS, *_JOINED_DOCUMENT_FIELDS)
    )
    entries: dict[int, tuple[tuple, list[DeliveredDocument]]] = {}
    for delivery_id, kind, status, sent_at, updated_at, loan, *document in rows:
        _, documents = entries.setdefault(delivery_id, ((kind, status, sent_at or updated_at, loan), []))
        if document[0] is not None:  # a delivery with no document still has its row
            documents.append(DeliveredDocument(*document))
    return [
        DeliveredEntry(pk, kind, status, sent_at, tuple(documents), loan or {})
        for pk, ((kind, status, sent_at, loan), documents) in entries.items()
    ]


def documents_uploaded(order: Order) -> list[OrderDocument]:
    """An automated order's documents the service has a copy of (uploaded), by position."""
    return list(
        order.attachments.filter(delivery__kind=DeliveryKind.RESULT, uploaded_at__isnull=False)
        .only(*DOCUMENT_FIELDS)
        .order_by("position")
    )


def response_documents(order: Order) -> list[OrderDocument]:
    """An automated order's delivered documents ([] until its response is delivered)."""
    return documents_uploaded(order) if response_delivered(order) else []


def _document_delivered() -> Q:
    """A document of a delivery the service took, or of an automated order's delivered response."""
    staff_delivered = Q(delivery__state__in=DELIVERED_STATES) & ~Q(delivery__kind=DeliveryKind.RESULT)
    response = (
        Q(delivery__kind=DeliveryKind.RESULT, uploaded_at__isnull=False, order__staff_worked=False)
        & (Q(order__delivered_at__isnull=False) | Q(order__status__in=RESPONSE_DELIVERED_STATUSES))
    )  # fmt: skip
    return staff_delivered | response


def document_delivered_get(*, order: Order, document_id: int) -> OrderDocument | None:
    """The order's document `document_id` when it was delivered to the lender; None otherwise
    (another order's, one still waiting for a delivery, one of a delivery not sent)."""
    return (
        OrderDocument.objects.filter(_document_delivered(), pk=document_id, order=order).only(*DOCUMENT_FIELDS).first()
    )
