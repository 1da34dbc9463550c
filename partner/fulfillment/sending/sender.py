"""The one sender of our responses: every `Delivery` of an order, sent in the order it was made.

Every response we owe the service is a stored `Delivery` (an automated result, a staff-worked
order's acknowledgement, the staff's status updates, partial and final deliveries and declines, the
notice of a failure), and this module is the only one that sends them: slots for its documents,
each upload, then the PATCH (the only call of `client.patch_response`). Each step is recorded
before the next, so a worker that dies resumes where it stopped and nothing is sent twice.

The sender runs inside an order's run (`partner.fulfillment.runs`), which holds the order's lease.
Right before each call that changes the service's state (slot request, upload, PATCH) it confirms in
the database that its worker still holds that lease (`Lease.confirm`): a worker whose lease ran out
(cut off, paused) and was taken by another sends nothing more (LeaseLost).

A transient error (429, 5xx, no answer) goes back to the run, which retries later; a permanent one
fails that delivery with its reason, and the next one waiting is still sent. When the service
refuses one the pipeline made (a result, an acknowledgement), the order fails with it.
"""

import logging
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Prefetch, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from partner.core.checkpoints import checkpoint
from partner.core.leases import Lease
from partner.fulfillment.models import (
    PIPELINE_KINDS,
    Delivery,
    DeliveryKind,
    DeliveryState,
    FailureCode,
    Order,
    OrderDocument,
    OrderStatus,
)
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.history import first_time, step_record
from partner.fulfillment.orders.metrics import order_delivered
from partner.fulfillment.orders.services import OrderFailed, order_fail, order_lock, order_settle
from partner.fulfillment.orders.states import delivery_move, delivery_move_where_allowed_returning, order_move
from partner.fulfillment.sending import uploads
from partner.platform import client
from partner.platform.errors import RequestRefused, ServiceError
from partner.platform.formats import LOAN_FORMAT, RESPONSE_COMPLETED, RESPONSE_PROCESSING

logger = logging.getLogger(__name__)


def delivery_payload(order: Order, delivery: Delivery, documents: list[OrderDocument]) -> dict:
    """The PATCH of one delivery: what the lender reads, the data and the documents.

    The pipeline's deliveries carry the response it prepared (the fulfiller's); a failure notice
    carries what the lender reads only; the staff's carry their status, data and result.
    """
    if delivery.kind in PIPELINE_KINDS:
        payload = dict(order.response or {})
    elif delivery.kind == DeliveryKind.FAILURE_NOTICE:
        payload = {"partnerStatus": delivery.partner_status}
    else:
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


def _response_version_next(order: Order):
    """The number of our PATCH of the transaction about to be sent (the first is 1), as an expression
    of the UPDATE that writes it before the PATCH: the highest the service accepted so far (sent or
    confirmed), plus one. A PATCH tried again after a transient error gets the same number again."""
    accepted = Delivery.objects.filter(order=order.pk, state__in=(DeliveryState.SENT, DeliveryState.CONFIRMED))
    highest = accepted.exclude(sequence=None).values("order").annotate(highest=Max("sequence")).values("highest")
    return Coalesce(Subquery(highest), 0) + 1


# What a sent delivery means beyond its order's status (which `order_settle` moves), by kind.


def _acknowledged(order: Order, delivery: Delivery, now) -> None:
    order_move(Order.objects.filter(pk=order.pk), OrderStatus.WITH_STAFF, updated_at=now)
    step_record(order, "acknowledged", delivery.partner_status)
    announcements.order_announce(order_id=order.pk, what=announcements.ACKNOWLEDGED, delivery_id=delivery.pk)


def _result_delivered(order: Order, delivery: Delivery, now) -> None:
    documents = delivery.documents
    resource_id = documents[0].resource_id if documents else ""
    # The processed callback may have completed the order already (and set delivered_at): keep the
    # first delivery time.
    Order.objects.filter(pk=order.pk).update(
        delivered_at=first_time("delivered_at", now), resource_id=resource_id, updated_at=now
    )
    order.delivered_at = order.delivered_at or now
    order.resource_id, order.updated_at = resource_id, now
    order_delivered(order, now)
    step_record(order, "delivered", f"{len(documents)} resource(s)")


def _lender_told(order: Order, delivery: Delivery, now) -> None:
    step_record(order, "lender_told", delivery.partner_status)


def _nothing_more(order: Order, delivery: Delivery, now) -> None:
    pass


SENT_EFFECTS: dict[str, Callable] = {
    DeliveryKind.RESULT: _result_delivered,
    DeliveryKind.ACKNOWLEDGEMENT: _acknowledged,
    DeliveryKind.STATUS_UPDATE: _nothing_more,
    DeliveryKind.PARTIAL: _nothing_more,
    DeliveryKind.FINAL: _nothing_more,
    DeliveryKind.DECLINE: _nothing_more,
    DeliveryKind.FAILURE_NOTICE: _lender_told,
}


def _sent(order: Order, delivery: Delivery) -> None:
    """Record the PATCH as sent, what it means for the order, and settle the order (`order_settle`),
    in one transaction, under the order's lock. A confirmation that came first (the service's
    callback beat this record) stays: its delivery keeps CONFIRMED, and the order settles from it."""
    now = timezone.now()
    with transaction.atomic():
        order_lock(Order.objects.filter(pk=order.pk))
        [recorded] = delivery_move_where_allowed_returning(
            Delivery.objects.filter(pk=delivery.pk), DeliveryState.SENT, sent_at=now, updated_at=now
        )
        SENT_EFFECTS[delivery.kind](order, delivery, now)
        order_settle(order_id=order.pk, delivery=recorded)
        if delivery.kind not in (DeliveryKind.RESULT, DeliveryKind.ACKNOWLEDGEMENT, DeliveryKind.FAILURE_NOTICE):
            step_record(order, "sent", f"{delivery.get_kind_display()} (response version {recorded.sequence})")
    logger.info("transaction %s: %s sent", order.transaction_id, delivery.get_kind_display().lower())


def _send(order: Order, delivery: Delivery, documents: list[OrderDocument], lease: Lease) -> None:
    unslotted = [document for document in documents if not document.resource_id]
    if unslotted:
        uploads.slots_request(order, unslotted, lease=lease)
    for document in documents:
        if document.uploaded_at is None:
            uploads.attachment_upload(order, document, lease=lease)
    payload = delivery_payload(order, delivery, documents)
    # The fence, the attempt's record and the response version this PATCH makes, in one statement:
    # a callback that names the version finds its delivery even before the PATCH returns.
    lease.confirm_with(
        Delivery.objects.filter(pk=delivery.pk), attempts=F("attempts") + 1, sequence=_response_version_next(order)
    )
    client.patch_response(order.transaction_id, payload)
    checkpoint("sender.patched")
    delivery.documents = documents
    _sent(order, delivery)


def _path(url: str) -> str:
    return url.removeprefix(settings.SVC_BASE_URL) if url else ""


def _refused(order: Order, delivery: Delivery, reason: str, *, code: str = FailureCode.SERVICE_REJECTED) -> None:
    """The delivery failed for good. One the pipeline made fails its order with it."""
    with transaction.atomic():
        failed = delivery_move(
            Delivery.objects.filter(pk=delivery.pk),
            DeliveryState.FAILED,
            failed_at=timezone.now(),
            failure_reason=reason[:2000],
            sequence=None,  # the service took no version of it
        )
        step_record(order, "delivery_failed", f"{delivery.get_kind_display()}: {reason}")
        if failed:
            announcements.order_announce(order_id=order.pk, what=announcements.DELIVERY_FAILED, delivery_id=delivery.pk)
    logger.warning("transaction %s: %s failed: %s", order.transaction_id, delivery.get_kind_display(), reason)
    if delivery.kind in PIPELINE_KINDS:
        order_fail(order=order, code=code, reason=reason)


# A delivery waiting to be sent, with its documents by position.
Waiting = tuple[Delivery, list[OrderDocument]]


def deliveries_waiting(order: Order) -> list[Waiting]:
    """The order's deliveries waiting to be sent, in the order they were made, with their documents."""
    documents = Prefetch("attachments", queryset=OrderDocument.objects.order_by("position"))
    waiting = order.deliveries.filter(state=DeliveryState.PENDING).order_by("created_at", "id")
    return [(delivery, list(delivery.attachments.all())) for delivery in waiting.prefetch_related(documents)]


def deliveries_send(order: Order, lease: Lease, *, waiting: list[Waiting] | None = None) -> int:
    """Send the order's waiting deliveries in the order they were made, under `lease` (the caller's
    hold on the order); how many were sent. The caller's run releases the lease (`runs.order_work`).
    Raises a transient ServiceError (the run is retried; what was sent stays sent) and
    LeaseLost (another worker has the order)."""
    waiting = deliveries_waiting(order) if waiting is None else waiting
    sent = 0
    for delivery, documents in waiting:
        try:
            _send(order, delivery, documents, lease)
            sent += 1
        except OrderFailed as failure:
            _refused(order, delivery, failure.message, code=failure.code)
        except ServiceError as exc:
            if exc.transient:
                Delivery.objects.filter(pk=delivery.pk).update(last_error=str(exc)[:2000])
                raise
            Delivery.objects.filter(pk=delivery.pk).update(last_error=str(exc)[:2000])
            if delivery.kind in PIPELINE_KINDS:
                Order.objects.filter(pk=order.pk).update(last_error=str(exc)[:2000])
                _refused(order, delivery, f"The service refused {exc.method} {_path(exc.url)} with status {exc.status}")
            else:
                _refused(order, delivery, f"The service refused it: {exc}")
        except RequestRefused as exc:
            # Refused before any request (an id that may not go into a path, a slot without its
            # Authorization value): refused again every time, so the delivery fails as a refused one does.
            Delivery.objects.filter(pk=delivery.pk).update(last_error=str(exc)[:2000])
            if delivery.kind in PIPELINE_KINDS:
                Order.objects.filter(pk=order.pk).update(last_error=str(exc)[:2000])
            _refused(order, delivery, f"The request was not sent: {exc}")
        if delivery.final:
            break  # nothing is sent after the final delivery, the decline or the result
    return sent
