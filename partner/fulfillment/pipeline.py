"""The automated fulfillment of one transaction, step by step (spec, "Typical fulfillment sequence").

`tracker_fulfill` takes the tracker (a lease, `partner.core.leases`) and runs the steps that
are not yet recorded as done; `tracker_fulfill_taken` runs them for a tracker its caller created
taken (the order's first run, in its transaction webhook's task):

1. prepare: GET the transaction, check the initiating user's credentials, run the product's
   fulfiller, store the response and its attachments;
2. request upload slots for the attachments (one POST; on the first run, before step 1 stores
   anything, so both are written together);
3. upload each attachment to its slot (one PUT each);
4. deliver: one PATCH with status, loan data, result and resources.

Each step is recorded when it completes, so a retried or restarted task resumes after the last
one. Transient service errors propagate (the task retries them, `partner.core.retries`);
permanent ones fail the tracker with a reason a person understands.
"""

import logging

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.models import Product
from partner.catalog.services import product_for_order
from partner.core.leases import lease_kept, lease_release, lease_take_one
from partner.core.logging import log_context
from partner.core.retries import retry_plan
from partner.fulfillment import staff_events, uploads
from partner.fulfillment.enqueue import tracker_fulfill_enqueue
from partner.fulfillment.fulfillers import Fulfillment, FulfillmentRefused, fulfiller_for
from partner.fulfillment.metrics import order_delivered
from partner.fulfillment.models import (
    ACTIVE_STATUSES,
    FailureCode,
    Tracker,
    TrackerAttachment,
    TrackerStatus,
)
from partner.fulfillment.services import (
    TrackerFailed,
    first_time,
    step_record,
    steps_batched,
    tracker_fail,
    tracker_give_up,
    tracker_retry_scheduled,
    transaction_ref,
)
from partner.platform import client
from partner.platform.errors import ResourceOutsideServiceError, ServiceError
from partner.platform.types import Transaction

logger = logging.getLogger(__name__)


def _take(tracker_id: int) -> Tracker | None:
    """Take the tracker for this worker, or None when it is finished or another worker holds it."""
    return lease_take_one(
        Tracker.objects.filter(pk=tracker_id, status__in=ACTIVE_STATUSES),
        attempts=F("attempts") + 1,
        next_attempt_at=None,
    )


def tracker_fulfill(*, tracker_id: int) -> Tracker | None:
    """Run every step not yet done. Returns the tracker as the run left it, or None when there was
    nothing to do."""
    tracker = _take(tracker_id)
    if tracker is None:
        return None
    with log_context(tracker_id=tracker.pk, transaction_id=tracker.transaction_id):  # its failure's lines too
        return _taken_fulfill(tracker)


def tracker_fulfill_taken(tracker: Tracker) -> Tracker:
    """Run the steps of a tracker the caller created taken (`tracker_open(work_here=True)`): the
    transaction webhook's own task does the order's first run, so an order needs no task and no
    take of its own. What a task run would retry (a transient error) goes to the fulfillment task,
    after the wait the service asked for or a backoff (`partner.core.retries`; this first run is not
    one of that task's counted runs); an unexpected error fails the order, as a task's does."""
    with log_context(tracker_id=tracker.pk, transaction_id=tracker.transaction_id):
        try:
            return _taken_fulfill(tracker)
        except ServiceError as exc:  # transient: the permanent ones failed the tracker
            plan = retry_plan(exc, retries=0)
            tracker_retry_scheduled(tracker_id=tracker.pk, countdown=plan.countdown, error=str(exc))
            tracker_fulfill_enqueue(tracker.pk, countdown=plan.countdown, rate_limited_since=plan.rate_limited_since)
        except Exception as exc:
            logger.exception("transaction %s: the first run stopped on an error", tracker.transaction_id)
            tracker_give_up(tracker_id=tracker.pk, error=f"{type(exc).__name__}: {exc}")
    return tracker


def _taken_fulfill(tracker: Tracker) -> Tracker:
    """The run of a taken tracker: its steps, written at its end (one INSERT); the lease released by
    the delivering UPDATE itself, or else at the end. A run that delivered knows where the tracker
    stands without reading it again."""
    released = False  # by the delivering UPDATE, or by the one that records a transient error
    try:
        with steps_batched(), lease_kept(Tracker.objects.filter(pk=tracker.pk)):
            released = _steps_run(tracker)
    except TrackerFailed as failure:
        tracker_fail(tracker=tracker, code=failure.code, reason=failure.reason, tell_lender=failure.tell_lender)
    except ServiceError as exc:
        if exc.transient:  # the lease given back with the error, in one UPDATE: the task comes back
            released = bool(lease_release(Tracker.objects.filter(pk=tracker.pk), last_error=str(exc)[:2000]))
            raise
        Tracker.objects.filter(pk=tracker.pk).update(last_error=str(exc)[:2000])
        tracker_fail(
            tracker=tracker,
            code=FailureCode.SERVICE_REJECTED,
            reason=f"The service refused {exc.method} {_path(exc.url)} with status {exc.status}",
        )
    finally:
        if not released:
            lease_release(Tracker.objects.filter(pk=tracker.pk))
    if not released:
        tracker.refresh_from_db()
    return tracker


def _steps_run(tracker: Tracker) -> bool:
    """Every step not yet done; True when this run delivered (and so released the lease)."""
    attachments = _prepare(tracker) if tracker.prepared_at is None else None
    if tracker.staff_worked:
        _acknowledge(tracker)  # the rest is the staff's work
        return False
    if attachments is None:  # prepared by an earlier run: its documents are read back
        attachments = list(tracker.attachments.all())
    if attachments and tracker.slots_requested_at is None:
        _upload_slots_request(tracker, attachments)
    for attachment in attachments:
        if attachment.uploaded_at is None:
            uploads.attachment_upload(tracker, attachment)
    if tracker.delivered_at is None:
        _deliver(tracker, attachments)
        return True
    return False


def _path(url: str) -> str:
    return url.removeprefix(settings.SVC_BASE_URL) if url else ""


def _transaction_read(tracker: Tracker) -> Transaction:
    """GET the transaction, after checking that the notification's reference names it on the service."""
    try:
        ref = client.resource_ref_parse(tracker.resource_ref or transaction_ref(tracker.transaction_id))
    except ResourceOutsideServiceError:
        raise TrackerFailed(
            FailureCode.RESOURCE_OUTSIDE_SERVICE, "The notification's resource reference is not on the service"
        ) from None
    if ref.transaction_id != tracker.transaction_id:
        raise TrackerFailed(FailureCode.RESOURCE_OUTSIDE_SERVICE, "The resource reference names another transaction")
    return client.get_transaction(tracker.transaction_id)


def _product(tracker: Tracker, txn: Transaction) -> Product:
    """The product the service's transaction record names: never the notification's word for it.

    A notification's product name (meta.instanceId) is only used when the record names none; when
    the two differ, the record wins and the difference is recorded for staff.
    """
    named = txn.raw.get("product") if isinstance(txn.raw.get("product"), dict) else {}
    service_id, record_name = str(named.get("id") or ""), str(named.get("name") or "")
    if record_name and tracker.product_name and record_name != tracker.product_name:
        step_record(tracker, "product_mismatch", f"notification named {tracker.product_name!r}, record {record_name!r}")
        logger.warning(
            "transaction %s: the notification named product %r, the transaction record %r (the record wins)",
            tracker.transaction_id,
            tracker.product_name,
            record_name,
        )
    product_name = record_name or tracker.product_name
    try:
        return product_for_order(service_id=service_id or None, name=product_name or None)
    except (ProductNotFound, ValueError):
        raise TrackerFailed(FailureCode.PRODUCT_UNKNOWN, f"Product {product_name!r} is not configured") from None
    except ProductSyncError as exc:
        # Pulling the product hit the service: retry what is transient, fail what is not.
        if isinstance(exc.__cause__, ServiceError):
            raise exc.__cause__ from None
        raise


# What preparing writes on the tracker; and, when the slots were asked for first, what they add.
PREPARED_FIELDS = [
    "response",
    "findings",
    "reference_number",
    "product_name",
    "ordered_by",
    "request_type",
    "prepared_at",
    "status",
    "request",
    "loan_number",
    "staff_worked",
    "due_at",
    "updated_at",
]
SLOTTED_FIELDS = ["slots_requested_at", "resource_id"]


def _prepare(tracker: Tracker) -> list[TrackerAttachment]:
    """Read the transaction, check the lender, do the work; store the response and its documents
    (which it returns) and mark the tracker prepared, in one transaction.

    An automated order's upload slots are asked for before that transaction, so that the documents
    are stored with their slots and the tracker marked prepared and slotted in one write. When the
    slot request fails, what was prepared is stored all the same: the next run starts from it.
    """
    txn = _transaction_read(tracker)
    request = txn.request or {}
    product = _product(tracker, txn)

    # Headless and interface orders authenticate the same way: the initiating user's credentials.
    check = credentials_check(product=product, credentials=request.get("credentials") or {})
    if not check.ok:
        raise TrackerFailed(FailureCode.CREDENTIALS_INVALID, check.message, tell_lender=True)

    try:
        fulfillment = fulfiller_for(product.fulfiller).fulfill(
            transaction_id=tracker.transaction_id, request=request, product=product.raw or {}
        )
    except FulfillmentRefused as refusal:
        # Refused for the lender's data (theirs to correct), or for the product's setup (ours).
        code = FailureCode.ORDER_REFUSED if refusal.tell_lender else FailureCode.SETUP_INCOMPLETE
        raise TrackerFailed(code, refusal.reason, tell_lender=refusal.tell_lender) from None

    tracker.ordered_by = check.account
    slots = None
    if fulfillment.final and fulfillment.attachments:
        try:
            slots = uploads.slots_get(tracker, [(a.name, a.mime_type) for a in fulfillment.attachments])
        except (ServiceError, TrackerFailed):
            _prepared_save(tracker, fulfillment, product=product, request=request, slots=None)
            raise
    return _prepared_save(tracker, fulfillment, product=product, request=request, slots=slots)


def _prepared_save(
    tracker: Tracker, fulfillment: Fulfillment, *, product: Product, request: dict, slots: list | None
) -> list[TrackerAttachment]:
    fields = PREPARED_FIELDS + (SLOTTED_FIELDS if slots else [])
    with transaction.atomic():
        attachments = _prepared_store(tracker, fulfillment, product=product, request=request, slots=slots)
        tracker.save(update_fields=fields)
        step_record(tracker, "prepared", f"fulfiller {product.fulfiller}, {len(fulfillment.attachments)} attachment(s)")
        if slots:
            step_record(tracker, "slots_requested", ", ".join(a.resource_id for a in attachments))
    return attachments


def _prepared_store(
    tracker: Tracker, fulfillment: Fulfillment, *, product: Product, request: dict, slots: list | None
) -> list[TrackerAttachment]:
    documents = []
    for position, attachment in enumerate(fulfillment.attachments):
        document = TrackerAttachment(
            tracker=tracker, position=position, name=attachment.name, mime_type=attachment.mime_type
        )
        document.size = len(attachment.content)
        document.file.save(attachment.name, ContentFile(attachment.content), save=False)
        if slots:
            uploads.slot_assign(document, slots[position])
        document.save()
        documents.append(document)
    if slots:
        _slotted(tracker, documents)
    tracker.response = fulfillment.response
    tracker.findings = fulfillment.findings
    tracker.reference_number = str(fulfillment.response.get("referenceNumber", ""))[:100]
    tracker.product_name = product.name
    tracker.request_type = str(request.get("type", ""))[:50]
    tracker.prepared_at = timezone.now()
    tracker.status = TrackerStatus.IN_PROGRESS
    # The order as the lender sent it, for the staff who work it: never the lender's credentials.
    tracker.request = {key: value for key, value in request.items() if key != "credentials"}
    loan = request.get("loan") if isinstance(request.get("loan"), dict) else {}
    tracker.loan_number = str(loan.get("loanNumber") or "")[:100]
    tracker.staff_worked = not fulfillment.final
    tracker.due_at = staff_events.due_at(product, tracker.created_at) if tracker.staff_worked else None
    return documents


def _slotted(tracker: Tracker, attachments: list[TrackerAttachment]) -> None:
    tracker.slots_requested_at = timezone.now()
    # Known from here on: the processed callback may complete the tracker before the PATCH returns.
    tracker.resource_id = attachments[0].resource_id if attachments else ""


def _upload_slots_request(tracker: Tracker, attachments: list[TrackerAttachment]) -> None:
    def recorded():
        _slotted(tracker, attachments)
        tracker.save(update_fields=[*SLOTTED_FIELDS, "updated_at"])

    uploads.slots_request(tracker, attachments, recorded=recorded)


def response_payload(tracker: Tracker, attachments: list[TrackerAttachment]) -> dict:
    """The PATCH body: the fulfiller's response, and the uploaded attachments as `resources`."""
    payload = dict(tracker.response or {})
    if attachments:
        payload["resources"] = uploads.resources(attachments)
    return payload


def _acknowledge(tracker: Tracker) -> None:
    """A staff-worked order: the acknowledgement PATCH, then the order is with staff (told by e-mail)."""
    client.patch_response(tracker.transaction_id, dict(tracker.response or {}))
    now = timezone.now()
    with transaction.atomic():
        moved = Tracker.objects.filter(pk=tracker.pk, status__in=ACTIVE_STATUSES).update(
            status=TrackerStatus.WITH_STAFF, updated_at=now
        )
        if moved:
            staff_events.acknowledgement_record(tracker, response=tracker.response or {}, now=now)
    logger.info("transaction %s: acknowledged, with staff", tracker.transaction_id)


def _deliver(tracker: Tracker, attachments: list[TrackerAttachment]) -> None:
    client.patch_response(tracker.transaction_id, response_payload(tracker, attachments))
    now = timezone.now()
    resource_id = attachments[0].resource_id if attachments else ""
    # The processed callback may have completed the tracker already (and set delivered_at):
    # never move it back.
    # One UPDATE: a worker killed between the delivery time and the state would leave a tracker
    # that skips the delivery on resume and never says it was delivered.
    # The lease is released in the same UPDATE: nothing is left for this run to write but its steps.
    Tracker.objects.filter(pk=tracker.pk).update(
        delivered_at=first_time("delivered_at", now),
        resource_id=resource_id,
        status=Case(
            When(status__in=ACTIVE_STATUSES, then=Value(TrackerStatus.RESPONSE_DELIVERED)), default=F("status")
        ),
        claimed_until=None,
        updated_at=now,
    )
    # The same, in memory (the callback may have completed it meanwhile: that run's status stands).
    tracker.delivered_at = tracker.delivered_at or now
    tracker.resource_id, tracker.claimed_until, tracker.updated_at = resource_id, None, now
    if tracker.status in ACTIVE_STATUSES:
        tracker.status = TrackerStatus.RESPONSE_DELIVERED
    order_delivered(tracker, now)
    step_record(tracker, "delivered", f"{len(attachments)} resource(s)")
    logger.info("transaction %s: response delivered", tracker.transaction_id)
