"""Reads behind the staff's work queue and order page: open or overdue, the timeline, the request.

Read-only; the rules of what staff may do stay in `partner.fulfillment.staff.services`, which decides again
on every action. `order_actions_open` only tells the page whether to offer the forms.

The timeline merges the order's steps and its deliveries by time. A delivery is one entry (what
was sent, by whom, its state); the steps that only say a delivery was asked for (the
acknowledgement, a status update posted, a delivery or a decline requested) are left out, as that
entry says it with more. What happened to it afterwards (sent, confirmed, failed, a callback) are
steps of their own, at their own times.
"""

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.timesince import timesince, timeuntil

from partner.fulfillment.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryKind,
    DeliveryState,
    Order,
    OrderDocument,
    OrderStatus,
)
from partner.platform.loan_labels import (
    ENUMERATION_FIELDS,
    LOAN_FIELD_LABELS,
    PROPERTY_FIELD_LABELS,
    loan_field_label,
    value_label,
)

# Steps a delivery entry already tells.
_DELIVERY_STEPS = {"acknowledged", "status_update_posted", "partial_requested", "final_requested", "decline_requested"}
# An order's states in the staff's words: the queue's filter and column, the order's page.
STATUS_LABELS = {
    OrderStatus.VALIDATION_REQUESTED: "Arriving: being checked",
    OrderStatus.IN_PROGRESS: "Arriving: being acknowledged",
    OrderStatus.WITH_STAFF: "Open: with staff",
    OrderStatus.RESPONSE_DELIVERED: "Delivered: waiting for the platform to confirm",
    OrderStatus.REQUEST_COMPLETED: "Completed",
    OrderStatus.DECLINED: "Declined",
    OrderStatus.FAILED: "Failed",
}


def status_label(order: Order) -> str:
    return STATUS_LABELS.get(order.status, order.get_status_display())


STEP_LABELS = {
    "opened": "Order arrived from the platform",
    "reopened": "Notified again",
    "prepared": "Order read and checked",
    "taken": "Taken",
    "taken_over": "Taken over",
    "released": "Released",
    "document_attached": "Document attached",
    "document_removed": "Document removed",
    "slots_requested": "Documents being sent",
    "fresh_slot": "Document being sent again",
    "uploaded": "Document sent",
    "sent": "Sent to the lender",
    "confirmed": "The platform confirmed the lender has it",
    "event": "The platform answered",
    "delivery_failed": "Delivery failed",
    "delivery_retry": "Delivery sent again",
    "overdue": "Past due: staff told",
    "completed": "Completed",
    "failed": "Failed",
    "lender_told": "Lender told of the failure",
    "lender_not_told": "Lender could not be told of the failure",
    "retry_requested": "Retry requested",
    "delivered": "Delivered",
    "product_mismatch": "Product mismatch",
    "acknowledged": "Acknowledged to the lender",
    "status_update_posted": "Status update posted",
    "partial_requested": "Partial delivery made",
    "final_requested": "Final delivery made",
    "decline_requested": "Decline made",
    "slot_renewed": "Document being sent again",
    "system_acknowledged": "The partner's system acknowledged it",
}


def step_label(name: str) -> str:
    """A step's name in the staff's words ("lender_told" -> "Lender told of the failure")."""
    return STEP_LABELS.get(name, name.replace("_", " ").capitalize())


# What a step's detail says in the staff's words. Details are recorded for the technical record (the
# platform's addresses, event and resource ids, response versions): the history shows what a person
# needs, never an address or an id.
_URL = re.compile(r"https?://\S+")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_IN_PARENTHESES = re.compile(r"\s*\([^)]*\)")
_COUNT = re.compile(r"(\d+) (?:resource|attachment)\(s\)")


def _documents(count: int) -> str:
    return "1 document" if count == 1 else f"{count} documents"


def step_detail(name: str, detail: str) -> str:
    """A step's recorded detail as staff read it in the order's history ("" when it holds nothing for them)."""
    detail = detail or ""
    if name in ("opened", "reopened", "completed", "failed", "retry_requested"):
        return ""  # an address or an event id; a failure's reason is on top of the page, in words
    if name in ("sent", "confirmed", "delivery_retry"):
        return _IN_PARENTHESES.sub("", detail)  # "Final delivery (response version 2)" -> "Final delivery"
    if name == "slots_requested":
        return _documents(len([part for part in detail.split(",") if part.strip()]))
    if name == "slot_renewed":
        return detail.split(";")[0]
    if name in ("delivered", "prepared"):
        count = _COUNT.search(detail)
        return _documents(int(count.group(1))) if count else ""
    if name == "event":
        return "A delivery the platform processed, with none waiting for it" if detail.startswith("processed") else ""
    return _UUID.sub("", _URL.sub("", detail)).strip(" :-–—,")


_READING_ORDER = {name: n for n, name in enumerate([*LOAN_FIELD_LABELS, *PROPERTY_FIELD_LABELS])}


def open_orders(queryset: QuerySet) -> QuerySet:
    """The orders staff still work: with staff (a final delivery not yet sent)."""
    return queryset.filter(status=OrderStatus.WITH_STAFF)


def by_staff_or_nobody() -> Q:
    """Orders no partner's system works: nobody's yet, or a staff member's. A partner's own order
    system works its connected orders through the API as an account that is not staff (the
    connection's user); a staff member who takes one over makes it theirs."""
    return Q(assigned_to__isnull=True) | Q(assigned_to__is_staff=True)


def staff_attention(queryset: QuerySet, *, now: datetime | None = None) -> QuerySet:
    """The orders that are staff's to see: every one but those a partner's system works on time and
    without a failed delivery (those reach staff once past due, failing, or taken over)."""
    failing = Delivery.objects.filter(state=DeliveryState.FAILED).values("order_id")
    return queryset.filter(by_staff_or_nobody() | Q(due_at__lt=now or timezone.now()) | Q(pk__in=failing))


def overdue_orders(queryset: QuerySet, *, now: datetime | None = None) -> QuerySet:
    """Open orders past their due time (as `notices.notices_due` finds them)."""
    return open_orders(queryset).filter(due_at__lt=now or timezone.now())


def queue_counts(queryset: QuerySet, *, now: datetime | None = None) -> dict[str, int]:
    """What needs attention in the queue: open orders, those nobody works yet (waiting), those overdue."""
    opened = open_orders(staff_attention(queryset, now=now))
    return {
        "open": opened.count(),
        "waiting": opened.filter(assigned_to__isnull=True).count(),
        "overdue": overdue_orders(queryset, now=now).count(),
    }


def order_overdue(order: Order, *, now: datetime | None = None) -> bool:
    return bool(order.status == OrderStatus.WITH_STAFF and order.due_at and order.due_at < (now or timezone.now()))


def order_actions_open(order: Order, deliveries: list[Delivery]) -> bool:
    """May staff still send anything for this order (with staff; no final delivery or decline made)?
    `deliveries`: all the order's (`order_history` reads them)."""
    if not order.staff_worked or order.status != OrderStatus.WITH_STAFF:
        return False
    ending = (DeliveryKind.FINAL, DeliveryKind.DECLINE)
    return not any(d.kind in ending and d.state != DeliveryState.FAILED for d in deliveries)


def age_text(order: Order, *, now: datetime | None = None) -> str:
    """How long ago the order came, at a glance ("2 days, 3 hours")."""
    return timesince(order.created_at, now or timezone.now(), depth=2)


def due_text(order: Order, *, now: datetime | None = None) -> str:
    """When the order is due, relative to now ("in 5 hours", "3 hours ago"); "" without a due time."""
    if order.due_at is None:
        return ""
    now = now or timezone.now()
    if order.due_at >= now:
        return f"in {timeuntil(order.due_at, now, depth=2)}"
    return f"{timesince(order.due_at, now, depth=2)} ago"


# The request -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One entry of a definition list: a scalar `text`, or `children` (an object or a list)."""

    label: str
    text: str = ""
    children: list["Item"] = field(default_factory=list)


def value_items(value) -> list[Item]:
    """An object or a list as definition-list items, nested as deep as the value is, in the staff's
    words: field names and enumeration values from the loan labels (`partner.platform.loan_labels`,
    the table the lender's panel and the reports use), amounts as amounts."""
    if isinstance(value, dict):
        # The fields the labels know in their reading order (an address as one reads it): the
        # database keeps a JSON object's keys in an order of its own.
        pairs = sorted(value.items(), key=lambda pair: _READING_ORDER.get(pair[0], len(_READING_ORDER)))
    elif isinstance(value, list):
        pairs = [(str(n), v) for n, v in enumerate(value, start=1)]
    else:
        return [Item(label="value", text=_scalar(value))]
    return [
        Item(label=loan_field_label(key), children=value_items(v))
        if isinstance(v, dict | list) and v
        else Item(loan_field_label(key), _scalar(v, name=str(key)))
        for key, v in pairs
    ]


def _scalar(value, *, name: str = "") -> str:
    if value is None or value == {} or value == []:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name in ENUMERATION_FIELDS:
        return str(value_label(value))
    if isinstance(value, int | float) and name.lower().endswith(("amount", "value", "price", "fee")):
        return f"${value:,.2f}".removesuffix(".00")
    return str(value)


@dataclass(frozen=True)
class OrderRequest:
    """The order as the lender sent it, split for the page."""

    loan: list[Item]
    options: list[Item]
    notes: str
    other: list[Item]


# What of the request is the platform's own bookkeeping, not the lender's order: the loan's media type
# and the ids of its resources. The request's type is said in words.
_REQUEST_PLUMBING = ("loan", "options", "loanFormat", "resources", "type")
REQUEST_TYPE_LABELS = {"NEW_REQUEST": "New order"}


def request_type_label(request_type: str) -> str:
    """A request type in words ("NEW_REQUEST" -> "New order"; another as words: "Cancel request")."""
    return REQUEST_TYPE_LABELS.get(request_type, request_type.replace("_", " ").capitalize())


def order_request(order: Order) -> OrderRequest:
    request = order.request if isinstance(order.request, dict) else {}
    loan = request.get("loan") if isinstance(request.get("loan"), dict) else {}
    options = dict(request.get("options")) if isinstance(request.get("options"), dict) else {}
    notes = options.pop("comments", "")
    other = {key: value for key, value in request.items() if key not in _REQUEST_PLUMBING}
    if isinstance(request.get("type"), str) and request["type"] != "NEW_REQUEST":
        other = {"kind of request": request_type_label(request["type"]), **other}  # a new order says nothing
    return OrderRequest(
        loan=value_items(loan),
        options=value_items(options) if options else [],
        notes=notes if isinstance(notes, str) else str(notes),
        other=value_items(other) if other else [],
    )


# The timeline ----------------------------------------------------------------------------------


@dataclass
class TimelineEntry:
    at: datetime
    what: str
    who: str
    detail: str = ""
    delivery: Delivery | None = None  # a delivery entry: its state, documents, reason, "Send again"
    documents: list[OrderDocument] = field(default_factory=list)  # the documents the delivery carried
    tries: list[DeliveryAttempt] = field(default_factory=list)  # the delivery's calls to the service, oldest first

    @cached_property
    def loan_labels(self) -> list[str]:
        """The loan fields a delivery carried, in words ("Subject property", "Appraisal")."""
        loan = self.delivery.loan if self.delivery is not None and isinstance(self.delivery.loan, dict) else {}
        return [loan_field_label(name) for name in loan]

    @property
    def failed(self) -> bool:
        return self.delivery is not None and self.delivery.state == DeliveryState.FAILED


@dataclass(frozen=True)
class OrderHistory:
    """What the order's page shows of what happened: the timeline, the documents no delivery took yet,
    and the deliveries (whether a final one was made: `order_actions_open`)."""

    timeline: list[TimelineEntry]
    documents_waiting: list[OrderDocument]
    deliveries: list[Delivery]


def order_history(order: Order) -> OrderHistory:
    """Everything that happened to the order, oldest first (its steps and deliveries merged by time),
    and its documents, in four queries however long the history: the steps, the deliveries, their
    tries and every document of the order (a delivery's and the waiting ones), each read by the order
    and handed to its delivery here, once for the page (a try and a document name their order as well
    as their delivery). Each is ordered within the one order, so no query joins the order (the models'
    own ordering begins with it)."""
    steps = order.steps.exclude(name__in=_DELIVERY_STEPS).order_by("created_at", "id")
    deliveries = list(order.deliveries.order_by("created_at", "id"))
    tried: dict[int, list[DeliveryAttempt]] = {}
    if deliveries:
        for attempt in order.service_tries.order_by("started_at", "id"):
            tried.setdefault(attempt.delivery_id, []).append(attempt)
    documents = list(order.attachments.order_by("position"))
    carried: dict[int, list[OrderDocument]] = {}
    for document in documents:
        if document.delivery_id is not None:
            carried.setdefault(document.delivery_id, []).append(document)
    entries = [
        TimelineEntry(
            at=step.created_at,
            what=step_label(step.name),
            who=step.actor or "system",
            detail=step_detail(step.name, step.detail),
        )
        for step in steps
    ]
    entries += [
        TimelineEntry(
            at=delivery.created_at,
            what=delivery.get_kind_display(),
            who=delivery.created_by or "system",
            detail=delivery.partner_status,
            delivery=delivery,
            documents=carried.get(delivery.pk, []),
            tries=tried.get(delivery.pk, []),
        )
        for delivery in deliveries
    ]
    entries.sort(key=lambda entry: entry.at)
    return OrderHistory(
        timeline=entries,
        documents_waiting=[document for document in documents if document.delivery_id is None],
        deliveries=deliveries,
    )
