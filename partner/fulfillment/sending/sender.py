"""The one sender of our responses: every `Delivery` of an order, sent in the order it was made.

Every response we owe the service is a stored `Delivery` (an automated result, a staff-worked
order's acknowledgement, the staff's status updates, partial and final deliveries and declines, the
notice of a failure), and this module is the only one that sends them: slots for its documents,
each upload, then the PATCH (the only call of `client.patch_response`). Each step is recorded
before the next, so a worker that dies resumes where it stopped and nothing is sent twice.

The sender runs inside an order's run (`partner.fulfillment.runs`), which holds the order's lease.
Right before each call that changes the service's state (slot request, upload, PATCH) it confirms in
the database that its worker still holds that lease (`Lease.confirm`): a worker whose lease ran out
(cut off, paused) and was taken by another sends nothing more (LeaseLost). A worker paused after
that confirmation (SIGSTOP, a frozen VM) is stopped on its own clock right before the call's first
byte leaves (`Lease.held`, through `partner.core.outbound.fenced`).

Every call tried for a delivery (each slot request, upload and PATCH, each resend) is kept as a
`DeliveryAttempt`, as an event's tries are (`partner.core.outbound` notes them): staff read them on
the order's admin page.

A transient error (429, 5xx, no answer) goes back to the run, which retries later; a permanent one
fails that delivery with its reason, and the next one waiting is still sent. When the service
refuses one the pipeline made (a result, an acknowledgement), the order fails with it.
"""

import contextlib
import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Prefetch, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from partner.core import outbound
from partner.core.checkpoints import checkpoint
from partner.core.leases import Lease, LeaseLost
from partner.core.retries import AnswerAwaited, outage_of
from partner.fulfillment.models import (
    PIPELINE_KINDS,
    Delivery,
    DeliveryAttempt,
    DeliveryKind,
    DeliveryState,
    FailureCode,
    Order,
    OrderDocument,
    ServiceCall,
)
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.failures import refusal_reason
from partner.fulfillment.orders.history import step_record, steps_atomic
from partner.fulfillment.orders.services import OrderFailed, order_fail, order_lock, order_refused, order_settle
from partner.fulfillment.orders.states import delivery_move, delivery_move_returning
from partner.fulfillment.sending import uploads
from partner.fulfillment.sending.accepted import delivery_accepted
from partner.platform import client, http
from partner.platform.errors import RequestRefused, ServiceError
from partner.platform.formats import LOAN_FORMAT, RESPONSE_COMPLETED, RESPONSE_PROCESSING
from partner.platform.metrics import endpoint_name

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


def _sent(order: Order, delivery: Delivery) -> None:
    """Record the PATCH as sent, with what the acceptance means for the order (`delivery_accepted`),
    and settle the order (`order_settle`), in one transaction, under the order's lock. A callback
    that came first (the service's confirmation beat this record) took the delivery out of
    `pending` and applied both: the record then only writes when it was sent. The run's history
    lines held so far are written in the same transaction (`steps_atomic`)."""
    now = timezone.now()
    with steps_atomic():  # the run's lines so far (slots, uploads, sent) too: no transaction of their own
        order_lock(Order.objects.filter(pk=order.pk))
        rows = Delivery.objects.filter(pk=delivery.pk)
        answered = {"sent_at": now, "unanswered_since": None, "updated_at": now}
        recorded = delivery_move_returning(rows, DeliveryState.SENT, **answered)
        if recorded:
            delivery_accepted(order, recorded[0], now, documents=delivery.documents)
            order_settle(order_id=order.pk, delivery=recorded[0])
        else:
            rows.update(**answered)
    logger.info("transaction %s: %s sent", order.transaction_id, delivery.get_kind_display().lower())


def _send(order: Order, delivery: Delivery, documents: list[OrderDocument], lease: Lease) -> bool:
    """Send one delivery (its slots, uploads, then the PATCH); False when it no longer waits."""
    unslotted = [document for document in documents if not document.resource_id]
    if unslotted:
        uploads.slots_request(order, unslotted, lease=lease)
    for document in documents:
        if document.uploaded_at is None:
            uploads.attachment_upload(order, document, lease=lease)
    payload = delivery_payload(order, delivery, documents)
    # The fence, the attempt's record and the response version this PATCH makes, in one statement:
    # a callback that names the version finds its delivery even before the PATCH returns. Only while
    # it still waits: a PATCH the service accepted whose record was lost (the database away) is
    # tried again once its callback had time to come (`_answer_await`), and a late callback may
    # still confirm it between this run's read and this fence.
    checkpoint("sender.fencing")
    waiting = Delivery.objects.filter(pk=delivery.pk, state=DeliveryState.PENDING)
    tried = {"attempts": F("attempts") + 1, "sequence": _response_version_next(order)}
    if not lease.confirm_where(waiting, unanswered_since=timezone.now(), **tried):
        return False
    checkpoint("sender.fenced")
    try:
        client.patch_response(order.transaction_id, payload)
    except Exception as exc:
        # The service answered (not 200: it did not take it), or one of ours failed before the
        # request left (the bearer token's cache away): not in doubt. No answer: it may have it.
        if getattr(exc, "status", None) is not None or outage_of(exc) is not None:
            Delivery.objects.filter(pk=delivery.pk).update(unanswered_since=None)
        raise
    checkpoint("sender.patched")
    delivery.documents = documents
    _sent(order, delivery)
    return True


def _refused(
    order: Order,
    delivery: Delivery,
    reason: str,
    *,
    code: str = FailureCode.SERVICE_REJECTED,
    error: ServiceError | RequestRefused | None = None,
) -> None:
    """The delivery failed for good. One the pipeline made fails its order with it (with the
    refused call's `error` kept on the order, `order_refused`, when a call was refused)."""
    with transaction.atomic():
        failed = delivery_move(
            Delivery.objects.filter(pk=delivery.pk),
            DeliveryState.FAILED,
            failed_at=timezone.now(),
            failure_reason=outbound.kept(reason),
            sequence=None,  # the service took no version of it
        )
        step_record(order, "delivery_failed", f"{delivery.get_kind_display()}: {reason}")
        if failed:
            announcements.order_announce(order_id=order.pk, what=announcements.DELIVERY_FAILED, delivery_id=delivery.pk)
    logger.warning("transaction %s: %s failed: %s", order.transaction_id, delivery.get_kind_display(), reason)
    if delivery.kind in PIPELINE_KINDS:
        if error is not None:
            order_refused(order=order, error=error)
        else:
            order_fail(order=order, code=code, reason=reason)


@contextlib.contextmanager
def _tries_kept(order: Order, delivery: Delivery):
    """Every call to the service tried within the block (each slot request, upload and PATCH, each
    resend of the transport's) kept as a `DeliveryAttempt` of the delivery, however the block ends."""
    with outbound.tries_noted() as tries:
        try:
            yield
        finally:
            rows = [
                DeliveryAttempt.from_try(
                    attempt, order=order, delivery=delivery, call=_call_of(attempt.method, attempt.url)
                )
                for attempt in tries
                if attempt.channel == http.CHANNEL
            ]
            if rows:
                DeliveryAttempt.objects.bulk_create(rows)


def _call_of(method: str, url: str) -> str:
    call = endpoint_name(method, url)
    return call if call in ServiceCall.values else ServiceCall.OTHER


# A delivery waiting to be sent, with its documents by position.
Waiting = tuple[Delivery, list[OrderDocument]]


def _answer_await(order: Order, delivery: Delivery, lease: Lease) -> None:
    """A delivery whose last PATCH left without an answer we recorded may have been accepted: until
    its callback had CALLBACK_WAIT_SECONDS to come, give the order back and raise AnswerAwaited (the
    run comes back then, uncounted; a callback that confirms it wakes the run at once). Checked
    under the order's lock, which the callback takes too: either the callback confirmed it first
    (the fence then finds it no longer pending and it is not sent), or the order is free when the
    callback looks, and the callback hands it to a run (`callbacks.delivery_confirm`)."""
    if delivery.unanswered_since is None:
        return
    until = delivery.unanswered_since + timedelta(seconds=settings.CALLBACK_WAIT_SECONDS)
    left = (until - timezone.now()).total_seconds()
    if left <= 0:
        return  # no callback came: the service did not take it, or its callback was lost; sent again
    reason = (
        f"{delivery.get_kind_display()}: its PATCH left at {delivery.unanswered_since:%H:%M:%S} UTC without an "
        f"answer recorded; waiting up to {left:.0f} s for the service's callback before sending it again"
    )
    checkpoint("sender.unanswered")
    with transaction.atomic():
        order_lock(Order.objects.filter(pk=order.pk))
        checkpoint("sender.unanswered_locked")
        if not Delivery.objects.filter(pk=delivery.pk, state=DeliveryState.PENDING).exists():
            return  # confirmed meanwhile: the fence passes it by
        if not lease.release(last_error=outbound.kept(reason), next_attempt_at=until):
            raise LeaseLost(f"the lease of {lease.label} is no longer this worker's")
    raise AnswerAwaited(reason, seconds=left)


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
        _answer_await(order, delivery, lease)
        with _tries_kept(order, delivery), outbound.fenced(lease.held):
            try:
                sent += _send(order, delivery, documents, lease)
            except OrderFailed as failure:
                _refused(order, delivery, failure.message, code=failure.code)
            except (ServiceError, RequestRefused) as exc:
                # A transient error goes back to the run; one refused for good (by the service, or by us
                # before any request: an id that may not go into a path, a slot without its
                # Authorization value) is refused every time, so the delivery fails with it.
                Delivery.objects.filter(pk=delivery.pk).update(last_error=outbound.kept(exc))
                if exc.transient:
                    raise
                said = delivery.kind not in PIPELINE_KINDS  # staff read it to send the delivery again
                _refused(order, delivery, refusal_reason(exc, said=said), error=exc)
        if delivery.final:
            break  # nothing is sent after the final delivery, the decline or the result
    return sent
