"""The lender's view of one order: its steps and when each was reached, what the partner found, what
reached the lender (the timeline and its documents), and, when it failed, what happened and what to do.

The answer is read on every poll of an open panel: two queries at most (the order with who placed
it, then its documents or deliveries), however long its history. Only what reached the lender is
shown: documents of a response the service took, never those of one it refused.
"""

from django.urls import reverse

from partner.catalog.form_values import loan_merged, loan_values_shown
from partner.catalog.product_cache import catalog_product
from partner.catalog.response_forms import loan_field_schemas
from partner.fulfillment.models import DeliveryKind, Order
from partner.fulfillment.orders.selectors import UI_STEPS
from partner.fulfillment.sending.delivered import (
    DeliveredEntry,
    deliveries_delivered,
    documents_uploaded,
    response_delivered,
)
from partner.fulfillment.staff.services import DECLINE_PREFIX
from partner.ui.outcomes import failure_explained
from partner.ui.selectors import order_for_lender

# What the lender reads for each kind of delivery.
ENTRY_LABELS = {
    DeliveryKind.ACKNOWLEDGEMENT: "Order received",
    DeliveryKind.STATUS_UPDATE: "Status update",
    DeliveryKind.PARTIAL: "Partial delivery",
    DeliveryKind.FINAL: "Final delivery",
    DeliveryKind.DECLINE: "Declined",
}
STEP_LABELS = {
    "requested": "Requested",
    "in_progress": "In progress",
    "delivered": "Delivered",
    "completed": "Completed",
}
# Nothing changes for the lender after these: the page stops asking. A failed order is not among
# them: the partner's staff may send it through again, and the open page shows it when they do.
FINISHED_STEPS = ("completed", "declined")


def _iso(moment) -> str | None:
    return moment.isoformat() if moment else None


def _document(transaction_id: str, document) -> dict:
    url = None
    if document.file:  # its file is gone once the retention period ends: listed, no longer downloadable
        url = reverse(
            "ui:transaction-document", kwargs={"transaction_id": transaction_id, "document_id": str(document.pk)}
        )
    return {
        "id": document.pk,
        "name": document.name,
        "mime_type": document.mime_type,
        "size": document.size,
        "resource_id": document.resource_id,  # the service's copy (what the host's openResource opens)
        "download_url": url,
    }


def _entry(
    transaction_id: str, *, entry_id: str, kind: str, text: str, sent_at, documents, values=(), loan=None
) -> dict:
    return {
        "id": entry_id,
        "kind": kind,
        "label": ENTRY_LABELS.get(kind, kind),
        "text": text,
        "sent_at": sent_at.isoformat(),
        "documents": [_document(transaction_id, document) for document in documents],
        "values": list(values),
        "loan": loan or {},  # as delivered: merged into the order's results, not sent to the page
    }


def _staff_entry(transaction_id: str, delivery: DeliveredEntry, schemas: dict) -> dict:
    return _entry(
        transaction_id,
        entry_id=f"delivery-{delivery.pk}",
        kind=delivery.kind,
        text=delivery.partner_status,
        sent_at=delivery.sent_at,
        documents=delivery.documents,
        values=loan_values_shown(schemas, delivery.loan),
        loan=delivery.loan,
    )


def response_schemas(order: Order) -> dict[str, dict | None]:
    """The schema of every loan field the order's deliveries may hold: its product's response form
    first (from the shared catalog cache: no query), then the seed's."""
    product = catalog_product(service_id=None, name=order.product_name) if order.product_name else None
    form = product.response_form if product is not None else None
    schemas = loan_field_schemas(form, None)
    own = form.get("properties") if isinstance(form, dict) and isinstance(form.get("properties"), dict) else {}
    return {**{name: schemas[name] for name in own}, **schemas}


def transaction_timeline(order: Order) -> list[dict]:
    """What reached the service, oldest first: a staff-worked order's sent deliveries, or an automated
    order's one delivered response; each with when it was sent, its text, its documents and the values
    it carried in words (`values`: the product's response form's labels and formats). One query."""
    if order.staff_worked:
        deliveries = deliveries_delivered(order)
        schemas = response_schemas(order) if any(delivery.loan for delivery in deliveries) else {}
        return [_staff_entry(order.transaction_id, delivery, schemas) for delivery in deliveries]
    if not response_delivered(order):
        return []  # nothing reached the lender: not even the documents made for it
    response = order.response or {}
    return [
        _entry(
            order.transaction_id,
            entry_id="response",
            kind=DeliveryKind.FINAL,
            text=str(response.get("partnerStatus", "")),
            sent_at=order.delivered_at or order.updated_at,
            documents=documents_uploaded(order),
        )
    ]


def _steps(order: Order, timeline: list[dict]) -> list[dict]:
    """The four steps, each with when it was reached (None: not yet), so a quick order's path shows."""
    if order.staff_worked:  # its final delivery's time, as the timeline already says it
        delivered = next((e["sent_at"] for e in timeline if e["kind"] == DeliveryKind.FINAL), None)
    else:
        delivered = _iso(order.delivered_at)
    reached = {
        "requested": _iso(order.created_at),
        "in_progress": _iso(order.prepared_at),
        "delivered": delivered,
        "completed": _iso(order.completed_at),
    }
    return [{"key": key, "label": label, "reached_at": reached[key]} for key, label in STEP_LABELS.items()]


def _ended_at(order: Order, step: str, timeline: list[dict]) -> str | None:
    if step == "failed":
        return _iso(order.failed_at)
    if step == "declined":
        decline = next((e["sent_at"] for e in reversed(timeline) if e["kind"] == DeliveryKind.DECLINE), None)
        return decline or _iso(order.updated_at)
    return None


def _requested(transaction_id: str) -> dict:
    """The host created the order but our webhook has not arrived yet: it is requested."""
    return {
        "transaction_id": transaction_id,
        "status": None,
        "step": "requested",
        "steps": [{"key": key, "label": label, "reached_at": None} for key, label in STEP_LABELS.items()],
        "ended_at": None,
        "reason": "",
        "failure": None,
        "reference_number": "",
        "ordered_at": None,
        "ordered_by": "",
        "partner_status": "",
        "findings": [],
        "results": [],
        "documents": [],
        "updated_at": None,
        "finished": False,
        "staff_worked": False,
        "due_at": None,
        "timeline": [],
    }


def transaction_progress_get(
    *,
    transaction_id: str,
    product_name: str,
    account_id: int | None = None,
    company_id: int | None = None,
    loan_number: str = "",
) -> dict:
    """The order as its lender sees it, or the 'requested' view before its webhook has landed.
    TransactionNotShown when it is another lender's, product's or loan's. Two queries at most."""
    order = order_for_lender(
        transaction_id=transaction_id,
        product_name=product_name,
        account_id=account_id,
        company_id=company_id,
        loan_number=loan_number,
    )
    if order is None:
        return _requested(transaction_id)
    step = UI_STEPS[order.status]
    timeline = transaction_timeline(order)
    # What the partner delivered, in the response form's words: every value the lender holds now (a
    # later delivery's value replaces an earlier one's), shown first.
    results = []
    if any(entry["loan"] for entry in timeline):
        results = loan_values_shown(response_schemas(order), loan_merged([entry.pop("loan") for entry in timeline]))
    for entry in timeline:
        entry.pop("loan", None)
    # Only what reached the lender (the timeline holds nothing else), the latest delivery's first; of a
    # staff delivery, only the documents the service has a copy of.
    documents = [d for e in reversed(timeline) for d in e["documents"] if d["resource_id"] or not order.staff_worked]
    delivered = bool(timeline)
    # The partner's last word is that of the latest delivery (for a staff-worked order, not the
    # acknowledgement's); before anything was delivered, the acknowledgement's or nothing.
    partner_status = next((e["text"] for e in reversed(timeline) if e["text"]), "")
    if not partner_status and order.staff_worked:
        partner_status = str((order.response or {}).get("partnerStatus", ""))
    reason, failure = "", None
    if step == "failed":
        failure = failure_explained(
            code=order.failure_code, reason=order.failure_reason, reference=order.reference_number
        )
        reason = failure["text"]
    elif step == "declined":
        decline = next((e["text"] for e in reversed(timeline) if e["kind"] == DeliveryKind.DECLINE), "")
        reason = order.failure_reason or decline.removeprefix(DECLINE_PREFIX)
    return {
        "transaction_id": order.transaction_id,
        "status": order.status,
        "step": step,
        "steps": _steps(order, timeline),
        "ended_at": _ended_at(order, step, timeline),
        "reason": reason,
        "failure": failure,
        "reference_number": order.reference_number,
        "ordered_at": _iso(order.created_at),
        "ordered_by": order.ordered_by.username if order.ordered_by_id else "",
        "partner_status": partner_status,
        # What the partner found, once it reached the lender (a failed delivery's findings did not).
        "findings": list(order.findings or []) if delivered and not order.staff_worked else [],
        "results": results,
        "documents": documents,
        "updated_at": order.updated_at.isoformat(),
        "finished": step in FINISHED_STEPS,
        "staff_worked": order.staff_worked,
        "due_at": _iso(order.due_at),
        "timeline": timeline,
    }
