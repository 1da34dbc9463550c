"""Sending the staff's deliveries: what a worker does with the `Delivery` rows staff stored.

A worker takes the order's lease (one worker per order at a time, as for the automated pipeline)
and sends its waiting deliveries in the order they were made, each step recorded before the
next: slots for its documents, each upload, the PATCH. A worker that dies resumes where it
stopped (an upload with an unknown outcome goes to a fresh slot); a transient error (429, 5xx,
no answer) goes back to the task, which retries later; a permanent one fails that delivery with
its reason for staff to read, and the next waiting one is still sent.
"""

import logging

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from partner.core.leases import lease_kept, lease_release, lease_remaining, lease_take
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus
from partner.fulfillment.orders.metrics import order_declined
from partner.fulfillment.orders.services import OrderFailed, first_time, step_record
from partner.fulfillment.sending import uploads
from partner.fulfillment.staff.notices import response_version_next
from partner.platform import client
from partner.platform.errors import ServiceError
from partner.platform.formats import LOAN_FORMAT, RESPONSE_COMPLETED, RESPONSE_PROCESSING

logger = logging.getLogger(__name__)


def delivery_payload(order: Order, delivery: Delivery, documents: list) -> dict:
    """The PATCH of one delivery: its status, what the lender reads, its data and documents."""
    payload = {"status": RESPONSE_COMPLETED if delivery.final else RESPONSE_PROCESSING}
    if order.reference_number:
        payload["referenceNumber"] = order.reference_number
    if delivery.partner_status:
        payload["partnerStatus"] = delivery.partner_status
    if delivery.loan:
        payload["loanFormat"] = LOAN_FORMAT
        payload["loan"] = delivery.loan
    if delivery.result:
        payload["result"] = delivery.result
    if documents:
        payload["resources"] = uploads.resources(documents)
    return payload


def _sent(order: Order, delivery: Delivery) -> None:
    """Record the PATCH as sent, and what it means for the order, in one transaction."""
    now = timezone.now()
    with transaction.atomic():
        sequence = response_version_next(order)
        Delivery.objects.filter(pk=delivery.pk).update(state=DeliveryState.SENT, sent_at=now, sequence=sequence)
        if delivery.kind == DeliveryKind.FINAL:
            Order.objects.filter(pk=order.pk, status=OrderStatus.WITH_STAFF).update(
                status=OrderStatus.RESPONSE_DELIVERED, delivered_at=first_time("delivered_at", now), updated_at=now
            )
        elif delivery.kind == DeliveryKind.DECLINE:
            declined = Order.objects.filter(pk=order.pk, status=OrderStatus.WITH_STAFF).update(
                status=OrderStatus.DECLINED, updated_at=now
            )
            if declined:
                order_declined(order)
        step_record(order, "sent", f"{delivery.get_kind_display()} (response version {sequence})")
    logger.info("transaction %s: %s sent", order.transaction_id, delivery.get_kind_display().lower())


def _send(order: Order, delivery: Delivery) -> None:
    documents = list(delivery.attachments.order_by("position"))
    if documents and delivery.slots_requested_at is None:
        uploads.slots_request(
            order,
            documents,
            recorded=lambda: Delivery.objects.filter(pk=delivery.pk).update(slots_requested_at=timezone.now()),
        )
    for document in documents:
        if document.uploaded_at is None:
            uploads.attachment_upload(order, document)
    client.patch_response(order.transaction_id, delivery_payload(order, delivery, documents))
    _sent(order, delivery)


def _failed(order: Order, delivery: Delivery, reason: str) -> None:
    Delivery.objects.filter(pk=delivery.pk).update(
        state=DeliveryState.FAILED, failed_at=timezone.now(), failure_reason=reason[:2000]
    )
    step_record(order, "delivery_failed", f"{delivery.get_kind_display()}: {reason}")
    logger.warning("transaction %s: %s failed: %s", order.transaction_id, delivery.get_kind_display(), reason)


def deliveries_send(*, order_id: int) -> int | None:
    """Send the order's waiting deliveries; how many were sent, or None when another worker holds it.

    A transient ServiceError is raised (the task retries); the deliveries sent before it stay sent.
    """
    rows = Order.objects.filter(pk=order_id, status=OrderStatus.WITH_STAFF)
    if not lease_take(rows):
        return None
    sent = 0
    try:
        with lease_kept(Order.objects.filter(pk=order_id)):
            order = Order.objects.get(pk=order_id)
            for delivery in order.deliveries.filter(state=DeliveryState.PENDING).order_by("created_at", "id"):
                Delivery.objects.filter(pk=delivery.pk).update(attempts=F("attempts") + 1)
                try:
                    _send(order, delivery)
                    sent += 1
                except OrderFailed as failure:
                    _failed(order, delivery, failure.reason)
                except ServiceError as exc:
                    Delivery.objects.filter(pk=delivery.pk).update(last_error=str(exc)[:2000])
                    if exc.transient:
                        raise
                    _failed(order, delivery, f"The service refused it: {exc}")
                if delivery.final:
                    break  # nothing is sent after the final delivery or the decline
    finally:
        lease_release(Order.objects.filter(pk=order_id))
    return sent


def deliveries_held_for(order_id: int) -> float:
    """Seconds until another worker's hold on the order runs out (0 when free)."""
    return lease_remaining(Order.objects.filter(pk=order_id))
