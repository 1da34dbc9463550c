"""The fulfilment of one transaction, step by step (spec, "Typical fulfillment sequence").

`tracker_open` creates the tracker when the transaction webhook (or the
reconciliation) tells us of a transaction. `tracker_fulfil` claims it and runs
the steps that are not yet recorded as done:

1. prepare: GET the transaction, check the initiating user's credentials, run
   the product's fulfiller, store the response and its attachments;
2. request upload slots for the attachments (one POST);
3. upload each attachment to its slot (one PUT each);
4. deliver: one PATCH with status, loan data, result and resources.

Each step is recorded when it completes, so a retried or restarted task
resumes after the last one. `tracker_event_handle` completes the tracker on
the service's processed callback.

Transient service errors propagate (the task retries them with backoff);
permanent ones fail the tracker with a reason a person understands.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.services import product_ensure
from partner.fulfillment.fulfillers import FulfilmentRefused, fulfiller_for
from partner.fulfillment.models import (
    ACTIVE_STATUSES,
    FailureCode,
    Tracker,
    TrackerAttachment,
    TrackerStatus,
    TrackerStep,
)
from partner.platform import client
from partner.platform.errors import ResourceOutsideServiceError, ServiceError
from partner.platform.types import UploadSlot
from partner.platform.urns import response_processed_event_type

logger = logging.getLogger(__name__)


class TrackerFailed(Exception):
    """A permanent failure: the tracker is failed with `reason` and not retried."""

    def __init__(self, code, reason, *, tell_lender=False):
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.tell_lender = tell_lender


def claim_seconds() -> int:
    """How long a worker holds a tracker: past the task's hard time limit, so a live task never loses it."""
    return int(settings.CELERY_TASK_TIME_LIMIT * 1.2) + 1


def transaction_ref(transaction_id: str) -> str:
    return f"{settings.SVC_BASE_URL}/partner/v2/transactions/{transaction_id}"


def step_record(tracker: Tracker, name: str, detail: str = "") -> None:
    TrackerStep.objects.create(tracker=tracker, name=name, detail=detail[:2000])


def tracker_open(*, transaction_id: str, resource_ref: str = "", product_name: str = "") -> tuple[Tracker, bool]:
    """The tracker of a transaction, created in VALIDATION_REQUESTED the first time we hear of it.

    Safe when two callers race: the unique transaction id decides, the loser reads the winner's row.
    """
    try:
        with transaction.atomic():
            tracker = Tracker.objects.create(
                transaction_id=transaction_id,
                resource_ref=resource_ref or transaction_ref(transaction_id),
                product_name=product_name,
            )
            step_record(tracker, "opened", resource_ref)
    except IntegrityError:
        return Tracker.objects.get(transaction_id=transaction_id), False
    return tracker, True


def _claim(tracker_id: int) -> Tracker | None:
    """Take the tracker for this worker, or None when it is finished or another worker holds it."""
    now = timezone.now()
    taken = Tracker.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now), pk=tracker_id, status__in=ACTIVE_STATUSES
    ).update(claimed_until=now + timedelta(seconds=claim_seconds()), attempts=F("attempts") + 1, next_attempt_at=None)
    if not taken:
        return None
    return Tracker.objects.get(pk=tracker_id)


def _release(tracker_id: int) -> None:
    Tracker.objects.filter(pk=tracker_id).update(claimed_until=None)


def tracker_fulfil(*, tracker_id: int) -> Tracker | None:
    """Run every step not yet done. Returns the tracker, or None when there was nothing to do."""
    tracker = _claim(tracker_id)
    if tracker is None:
        return None
    try:
        if tracker.prepared_at is None:
            _prepare(tracker)
        attachments = list(tracker.attachments.all())
        if attachments and tracker.slots_requested_at is None:
            _slots_request(tracker, attachments)
        for attachment in attachments:
            if attachment.uploaded_at is None:
                _upload(tracker, attachment)
        if tracker.delivered_at is None:
            _deliver(tracker, attachments)
    except TrackerFailed as failure:
        tracker_fail(tracker=tracker, code=failure.code, reason=failure.reason, tell_lender=failure.tell_lender)
    except ServiceError as exc:
        Tracker.objects.filter(pk=tracker.pk).update(last_error=str(exc)[:2000])
        if exc.transient:
            raise
        tracker_fail(
            tracker=tracker,
            code=FailureCode.SERVICE_REJECTED,
            reason=f"The service refused {exc.method} {_path(exc.url)} with status {exc.status}",
        )
    finally:
        _release(tracker.pk)
    tracker.refresh_from_db()
    return tracker


def _path(url: str) -> str:
    return url.removeprefix(settings.SVC_BASE_URL) if url else ""


def _prepare(tracker: Tracker) -> None:
    try:
        ref = client.resource_ref_parse(tracker.resource_ref or transaction_ref(tracker.transaction_id))
    except ResourceOutsideServiceError:
        raise TrackerFailed(
            FailureCode.RESOURCE_OUTSIDE_SERVICE, "The notification's resource reference is not on the service"
        ) from None
    if ref.transaction_id != tracker.transaction_id:
        raise TrackerFailed(FailureCode.RESOURCE_OUTSIDE_SERVICE, "The resource reference names another transaction")

    txn = client.get_transaction(tracker.transaction_id)
    request = txn.request or {}
    product_name = tracker.product_name or ((txn.raw.get("product") or {}).get("name") or "")
    try:
        product = product_ensure(name=product_name)
    except ProductNotFound:
        raise TrackerFailed(FailureCode.PRODUCT_UNKNOWN, f"Product {product_name!r} is not configured") from None
    except ProductSyncError as exc:
        # Pulling the product hit the service: retry what is transient, fail what is not.
        if isinstance(exc.__cause__, ServiceError):
            raise exc.__cause__ from None
        raise

    # Headless and interface orders authenticate the same way: the initiating user's credentials.
    check = credentials_check(product=product, credentials=request.get("credentials") or {})
    if not check.ok:
        raise TrackerFailed(FailureCode.CREDENTIALS_INVALID, check.message, tell_lender=True)

    try:
        fulfilment = fulfiller_for(product.fulfiller).fulfil(
            transaction_id=tracker.transaction_id, request=request, product=product.raw or {}
        )
    except FulfilmentRefused as refusal:
        raise TrackerFailed(
            FailureCode.ORDER_REFUSED, refusal.reason, tell_lender=getattr(refusal, "tell_lender", True)
        ) from None

    with transaction.atomic():
        for position, attachment in enumerate(fulfilment.attachments):
            TrackerAttachment.objects.create(
                tracker=tracker,
                position=position,
                name=attachment.name,
                mime_type=attachment.mime_type,
                content=attachment.content,
            )
        tracker.response = fulfilment.response
        tracker.reference_number = str(fulfilment.response.get("referenceNumber", ""))[:100]
        tracker.product_name = product.name
        tracker.ordered_by = check.account
        tracker.request_type = str(request.get("type", ""))[:50]
        tracker.prepared_at = timezone.now()
        tracker.status = TrackerStatus.IN_PROGRESS
        tracker.save(
            update_fields=[
                "response",
                "reference_number",
                "product_name",
                "ordered_by",
                "request_type",
                "prepared_at",
                "status",
                "updated_at",
            ]
        )
        step_record(tracker, "prepared", f"fulfiller {product.fulfiller}, {len(fulfilment.attachments)} attachment(s)")


def _slots_request(tracker: Tracker, attachments: list[TrackerAttachment]) -> None:
    slots = client.request_upload_slots(
        tracker.transaction_id, [{"name": a.name, "mimeType": a.mime_type} for a in attachments]
    )
    if len(slots) != len(attachments):
        raise TrackerFailed(FailureCode.SERVICE_REJECTED, "The service returned a different number of upload slots")
    with transaction.atomic():
        for attachment, slot in zip(attachments, slots, strict=True):
            attachment.resource_id = slot.id
            attachment.upload_location = slot.location
            attachment.upload_authorization = slot.authorization or ""
            attachment.save(update_fields=["resource_id", "upload_location", "upload_authorization"])
        tracker.slots_requested_at = timezone.now()
        # Known from here on: the processed callback may complete the tracker before the PATCH returns.
        tracker.resource_id = attachments[0].resource_id if attachments else ""
        tracker.save(update_fields=["slots_requested_at", "resource_id", "updated_at"])
        step_record(tracker, "slots_requested", ", ".join(a.resource_id for a in attachments))


def _upload(tracker: Tracker, attachment: TrackerAttachment) -> None:
    slot = UploadSlot(
        id=attachment.resource_id,
        name=attachment.name,
        mime_type=attachment.mime_type,
        location=attachment.upload_location,
        authorization=attachment.upload_authorization,
    )
    client.upload_resource(slot, bytes(attachment.content))
    attachment.uploaded_at = timezone.now()
    attachment.save(update_fields=["uploaded_at"])
    step_record(tracker, "uploaded", f"{attachment.name} ({len(attachment.content)} bytes)")


def response_payload(tracker: Tracker, attachments: list[TrackerAttachment]) -> dict:
    payload = dict(tracker.response or {})
    if attachments:
        payload["resources"] = [{"id": a.resource_id, "name": a.name, "mimeType": a.mime_type} for a in attachments]
    return payload


def _deliver(tracker: Tracker, attachments: list[TrackerAttachment]) -> None:
    client.patch_response(tracker.transaction_id, response_payload(tracker, attachments))
    now = timezone.now()
    resource_id = attachments[0].resource_id if attachments else ""
    # The processed callback may have completed the tracker already (and set delivered_at):
    # never move it back.
    Tracker.objects.filter(pk=tracker.pk).update(
        delivered_at=_first_time("delivered_at", now), resource_id=resource_id, updated_at=now
    )
    Tracker.objects.filter(pk=tracker.pk, status__in=ACTIVE_STATUSES).update(status=TrackerStatus.RESPONSE_DELIVERED)
    step_record(tracker, "delivered", f"{len(attachments)} resource(s)")
    logger.info("transaction %s: response delivered", tracker.transaction_id)


def _first_time(field: str, now):
    """An update expression that keeps an earlier time in `field` and sets `now` otherwise."""
    return Coalesce(F(field), Value(now, output_field=DateTimeField()))


def tracker_fail(*, tracker: Tracker, code: str, reason: str, tell_lender: bool = False) -> None:
    """Fail the tracker for good; tell the lender through partnerStatus where that helps them."""
    now = timezone.now()
    Tracker.objects.filter(pk=tracker.pk).exclude(status=TrackerStatus.REQUEST_COMPLETED).update(
        status=TrackerStatus.FAILED, failure_code=code, failure_reason=reason[:2000], failed_at=now, updated_at=now
    )
    step_record(tracker, "failed", reason)
    logger.warning("transaction %s failed: %s (%s)", tracker.transaction_id, reason, code)
    if tell_lender:
        try:
            client.patch_response(tracker.transaction_id, {"partnerStatus": f"Order not fulfilled: {reason}"[:500]})
            step_record(tracker, "lender_told", reason)
        except ServiceError as exc:  # the failure stands; the lender still sees it in our UI
            step_record(tracker, "lender_not_told", str(exc))


def tracker_retry_scheduled(*, tracker_id: int, countdown: float, error: str) -> None:
    Tracker.objects.filter(pk=tracker_id).update(
        next_attempt_at=timezone.now() + timedelta(seconds=countdown), last_error=error[:2000]
    )


def tracker_give_up(*, tracker_id: int, error: str) -> None:
    tracker = Tracker.objects.filter(pk=tracker_id, status__in=ACTIVE_STATUSES).first()
    if tracker is not None:
        tracker_fail(tracker=tracker, code=FailureCode.RETRIES_EXHAUSTED, reason=f"Gave up after retries: {error}")


def tracker_complete(*, transaction_id: str, event_id: str) -> Tracker | None:
    """The processed callback: REQUEST_COMPLETED, whatever step the tracker recorded last."""
    now = timezone.now()
    done = (
        Tracker.objects.filter(transaction_id=transaction_id)
        .exclude(status=TrackerStatus.FAILED)
        .update(
            status=TrackerStatus.REQUEST_COMPLETED,
            completed_at=now,
            # The service processed our response, so it was delivered, even if the worker
            # that sent the PATCH has not recorded it yet.
            delivered_at=_first_time("delivered_at", now),
            event_id=event_id,
            updated_at=now,
        )
    )
    tracker = Tracker.objects.filter(transaction_id=transaction_id).first()
    if done and tracker is not None:
        step_record(tracker, "completed", f"event {event_id}")
        logger.info("transaction %s: request completed (event %s)", transaction_id, event_id)
    return tracker


def tracker_event_handle(*, resource_ref: str) -> str:
    """GET the callback event; complete the tracker when the response was processed. Returns the event type."""
    ref = client.resource_ref_parse(resource_ref)
    event = client.get_event(ref.transaction_id, ref.event_id)
    if event.type == response_processed_event_type():
        tracker_complete(transaction_id=ref.transaction_id, event_id=ref.event_id)
    else:
        tracker = Tracker.objects.filter(transaction_id=ref.transaction_id).first()
        if tracker is not None:
            step_record(tracker, "event", f"{event.type} ({ref.event_id})")
    return event.type


def tracker_retry(*, tracker: Tracker) -> None:
    """Admin action: put a failed tracker back to work from its last completed step."""
    Tracker.objects.filter(pk=tracker.pk, status=TrackerStatus.FAILED).update(
        status=TrackerStatus.IN_PROGRESS if tracker.prepared_at else TrackerStatus.VALIDATION_REQUESTED,
        failure_code="",
        failure_reason="",
        failed_at=None,
        claimed_until=None,
        next_attempt_at=None,
    )
    step_record(tracker, "retry_requested")


def trackers_stalled(*, older_than: timedelta):
    """Active trackers no worker holds and no retry is due for: their task was lost."""
    now = timezone.now()
    return Tracker.objects.filter(
        Q(claimed_until__isnull=True) | Q(claimed_until__lt=now),
        Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lt=now - older_than),
        status__in=ACTIVE_STATUSES,
        updated_at__lt=now - older_than,
    )
