"""Reads behind the embedded UI: a transaction's progress and its documents, for the lender who may see them.

The progress answer holds the order's timeline: what reached the service, in the order it got
there, in the lender's words (`partner.fulfillment.delivered` says what counts as delivered). Its
queries do not grow with the number of deliveries or documents.
"""

import re

from django.urls import reverse

from partner.fulfillment.delivered import (
    deliveries_delivered,
    document_delivered_get,
    documents_uploaded,
    response_delivered,
)
from partner.fulfillment.models import DeliveryKind, Tracker, TrackerAttachment
from partner.fulfillment.selectors import UI_STEPS, tracker_get
from partner.fulfillment.staff import DECLINE_PREFIX

# What the lender reads for each kind of delivery.
ENTRY_LABELS = {
    DeliveryKind.ACKNOWLEDGEMENT: "Order received",
    DeliveryKind.STATUS_UPDATE: "Status update",
    DeliveryKind.PARTIAL: "Partial delivery",
    DeliveryKind.FINAL: "Final delivery",
    DeliveryKind.DECLINE: "Declined",
}
# A decline's partnerStatus, as the staff's decline writes it; the reason is what follows.
# Nothing changes for the lender after these steps: the page stops asking.
FINISHED_STEPS = ("completed", "failed", "declined")
_DOCUMENT_ID = re.compile(r"[0-9]{1,18}")


class TransactionNotShown(Exception):
    """The transaction is another product's or another lender's: not for this lender's page."""


class DocumentNotShown(TransactionNotShown):
    """No such document of this order for the lender: another order's, not delivered, or purged."""


def lender_may_see(*, tracker, account_id: int | None, company_id: int | None) -> bool:
    """The order's own user, or a user of the same lender company; anyone with the product's origin
    when the order was placed without partner credentials (a product that defines none)."""
    if tracker.ordered_by_id is None:
        return True
    if account_id is not None and tracker.ordered_by_id == account_id:
        return True  # the same user: no need to load the account
    return company_id is not None and tracker.ordered_by.company_id == company_id


def _tracker_for_lender(
    *, transaction_id: str, product_name: str, account_id: int | None, company_id: int | None
) -> Tracker | None:
    """The order's tracker (None before its webhook landed); TransactionNotShown when it is not theirs."""
    tracker = tracker_get(transaction_id=transaction_id)
    if tracker is not None and tracker.product_name and tracker.product_name != product_name:
        raise TransactionNotShown(transaction_id)
    if tracker is not None and not lender_may_see(tracker=tracker, account_id=account_id, company_id=company_id):
        raise TransactionNotShown(transaction_id)
    return tracker


def _document(tracker: Tracker, document: TrackerAttachment) -> dict:
    url = None
    if document.file:  # its file is gone once the retention period ends: listed, no longer downloadable
        url = reverse(
            "ui:transaction-document",
            kwargs={"transaction_id": tracker.transaction_id, "document_id": str(document.pk)},
        )
    return {
        "id": document.pk,
        "name": document.name,
        "mime_type": document.mime_type,
        "size": document.size,
        "resource_id": document.resource_id,  # the service's copy (what the host's openResource opens)
        "download_url": url,
    }


def _entry(tracker: Tracker, *, entry_id: str, kind: str, text: str, sent_at, documents) -> dict:
    return {
        "id": entry_id,
        "kind": kind,
        "label": ENTRY_LABELS.get(kind, kind),
        "text": text,
        "sent_at": sent_at.isoformat(),
        "documents": [_document(tracker, document) for document in documents],
    }


def transaction_timeline(tracker: Tracker, *, uploaded: list[TrackerAttachment] | None = None) -> list[dict]:
    """What reached the service, oldest first: a staff-worked order's sent deliveries, or an automated
    order's one delivered response; each with when it was sent, its text and its documents. Two
    queries at most (`uploaded`: an automated order's uploaded documents, when already read)."""
    if tracker.staff_worked:
        return [
            _entry(
                tracker,
                entry_id=f"delivery-{delivery.pk}",
                kind=delivery.kind,
                text=delivery.partner_status,
                sent_at=delivery.sent_at or delivery.updated_at,
                documents=delivery.documents,
            )
            for delivery in deliveries_delivered(tracker)
        ]
    if not response_delivered(tracker):
        return []
    response = tracker.response or {}
    return [
        _entry(
            tracker,
            entry_id="response",
            kind=DeliveryKind.FINAL,
            text=str(response.get("partnerStatus", "")),
            sent_at=tracker.delivered_at or tracker.updated_at,
            documents=documents_uploaded(tracker) if uploaded is None else uploaded,
        )
    ]


def _requested(transaction_id: str) -> dict:
    """The host created the order but our webhook has not arrived yet: it is requested."""
    return {
        "transaction_id": transaction_id,
        "status": None,
        "step": "requested",
        "reason": "",
        "reference_number": "",
        "partner_status": "",
        "attachments": [],
        "updated_at": None,
        "finished": False,
        "staff_worked": False,
        "due_at": None,
        "timeline": [],
    }


def _attachment(document: TrackerAttachment | dict) -> dict:
    if isinstance(document, dict):
        return {"name": document["name"], "mime_type": document["mime_type"], "resource_id": document["resource_id"]}
    return {"name": document.name, "mime_type": document.mime_type, "resource_id": document.resource_id}


def transaction_progress_get(
    *, transaction_id: str, product_name: str, account_id: int | None = None, company_id: int | None = None
) -> dict:
    """The order's step, attachments and timeline, or the 'requested' view before the webhook has
    landed. At most three queries (four for a colleague's order), however long the timeline."""
    tracker = _tracker_for_lender(
        transaction_id=transaction_id, product_name=product_name, account_id=account_id, company_id=company_id
    )
    if tracker is None:
        return _requested(transaction_id)
    step = UI_STEPS[tracker.status]
    partner_status = str((tracker.response or {}).get("partnerStatus", ""))
    reason = tracker.failure_reason
    if tracker.staff_worked:
        timeline = transaction_timeline(tracker)
        # Only what reached the lender: never a document uploaded for a delivery the service refused.
        attachments = [_attachment(d) for entry in timeline for d in entry["documents"] if d["resource_id"]]
        # The partner's last word is that of the latest delivery, not the acknowledgement's.
        partner_status = next((e["text"] for e in reversed(timeline) if e["text"]), partner_status)
    else:
        uploaded = documents_uploaded(tracker)
        timeline = transaction_timeline(tracker, uploaded=uploaded)
        attachments = [_attachment(document) for document in uploaded]
    if step == "declined" and not reason:
        decline = next((e["text"] for e in reversed(timeline) if e["kind"] == DeliveryKind.DECLINE), "")
        reason = decline.removeprefix(DECLINE_PREFIX)
    return {
        "transaction_id": tracker.transaction_id,
        "status": tracker.status,
        "step": step,
        "reason": reason,
        "reference_number": tracker.reference_number,
        "partner_status": partner_status,
        "attachments": attachments,
        "updated_at": tracker.updated_at.isoformat(),
        "finished": step in FINISHED_STEPS,
        "staff_worked": tracker.staff_worked,
        "due_at": tracker.due_at.isoformat() if tracker.due_at else None,
        "timeline": timeline,
    }


def transaction_document_get(
    *,
    transaction_id: str,
    document_id: str,
    product_name: str,
    account_id: int | None = None,
    company_id: int | None = None,
) -> TrackerAttachment:
    """A delivered document of the lender's order, with its file; DocumentNotShown (or
    TransactionNotShown) otherwise, so that every refusal answers the same."""
    tracker = _tracker_for_lender(
        transaction_id=transaction_id, product_name=product_name, account_id=account_id, company_id=company_id
    )
    if tracker is None or not _DOCUMENT_ID.fullmatch(document_id or ""):
        raise DocumentNotShown(document_id)
    document = document_delivered_get(tracker=tracker, document_id=int(document_id))
    if document is None or not document.file:
        raise DocumentNotShown(document_id)
    return document
