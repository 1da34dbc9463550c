"""Documents to the service: slots requested, each file streamed to its slot, resumable.

The sender's (`partner.fulfillment.sending.sender`), for the documents of every delivery. Each call
is fenced: right before it, the worker confirms in the database that it still holds the order's
lease (`Lease.confirm`), so a worker whose lease ran out sends nothing more. Each step is recorded
on the document before the next: a run that finds an upload started and not finished
knows its outcome is unknown (the spec gives no way to ask whether a location received our
bytes) and uploads to a fresh slot, so the PATCH always names what was really uploaded.
"""

from django.utils import timezone

from partner.core.leases import Lease
from partner.fulfillment.models import FailureCode, Order, OrderDocument
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.orders.services import OrderFailed
from partner.platform import client
from partner.platform.errors import ServiceError, ServiceValidationError
from partner.platform.locations import UploadLocationRefusedError


def slot_assign(attachment: OrderDocument, slot) -> None:
    """Keep `slot` on the document, in memory (its caller saves it)."""
    attachment.resource_id = slot.id
    attachment.upload_location = slot.location
    attachment.upload_authorization = slot.authorization or ""
    attachment.upload_started_at = None


SLOT_FIELDS = ["resource_id", "upload_location", "upload_authorization", "upload_started_at"]


def _slot_save(attachment: OrderDocument, slot) -> None:
    slot_assign(attachment, slot)
    attachment.save(update_fields=SLOT_FIELDS)


def slots_get(order: Order, documents: list[tuple[str, str]], *, lease: Lease) -> list:
    """One slot request (#4) for `documents`, (name, MIME type) each: the slots, one per document."""
    lease.confirm()
    slots = client.request_upload_slots(order.transaction_id, [{"name": n, "mimeType": m} for n, m in documents])
    if len(slots) != len(documents):
        raise OrderFailed(FailureCode.SERVICE_REJECTED, "The service returned a different number of upload slots")
    return slots


def slots_request(order: Order, attachments: list[OrderDocument], *, lease: Lease) -> None:
    """One slot request for stored `attachments` (those without a slot yet), then each slot kept on its
    document, all in one UPDATE, made only once the service answered. A document with a slot is
    never given another unless its upload was cut off or refused (`attachment_upload`)."""
    slots = slots_get(order, [(a.name, a.mime_type) for a in attachments], lease=lease)
    for attachment, slot in zip(attachments, slots, strict=True):
        slot_assign(attachment, slot)
    if len(attachments) == 1:
        # The usual delivery, one document: a plain UPDATE. `bulk_update` writes a CASE per field in
        # a transaction of its own, four times the worker's CPU for one row (issue 38).
        [attachment] = attachments
        OrderDocument.objects.filter(pk=attachment.pk).update(
            **{name: getattr(attachment, name) for name in SLOT_FIELDS}
        )
    else:
        OrderDocument.objects.bulk_update(attachments, SLOT_FIELDS)
    step_record(order, "slots_requested", ", ".join(a.resource_id for a in attachments))


def _fresh_slot(order: Order, attachment: OrderDocument, why: str, *, lease: Lease) -> None:
    _slot_save(attachment, slots_get(order, [(attachment.name, attachment.mime_type)], lease=lease)[0])
    step_record(order, "slot_renewed", f"{attachment.name}: {why}; new resource {attachment.resource_id}")


def attachment_upload(order: Order, attachment: OrderDocument, *, lease: Lease) -> None:
    """PUT one document to its slot (#5), its file streamed. An upload a dead worker had started, or
    one the service says was already made (409: the one-time authorization is spent), goes to a fresh
    slot."""
    if attachment.upload_started_at is not None:
        _fresh_slot(order, attachment, "an earlier upload was cut off", lease=lease)
    for last_try in (False, True):
        # The fence and the record that an upload began, in one statement.
        attachment.upload_started_at = timezone.now()
        lease.confirm_with(
            OrderDocument.objects.filter(pk=attachment.pk), upload_started_at=attachment.upload_started_at
        )
        try:
            with attachment.file.open("rb") as handle:
                client.upload_resource(attachment.upload_slot(), handle)
            break
        except UploadLocationRefusedError as exc:  # nothing was sent; a service that says so again is no better
            raise OrderFailed(
                FailureCode.SERVICE_REJECTED,
                f"The service gave an upload location we do not send documents to ({exc})",
            ) from None
        except ServiceValidationError as exc:
            if exc.status != 409 or last_try:
                raise
            _fresh_slot(order, attachment, "the slot was already used", lease=lease)
        except ServiceError as exc:
            if exc.status is not None:
                # The service answered (429, 5xx): it did not take the bytes, the slot is still good.
                attachment.upload_started_at = None
                attachment.save(update_fields=["upload_started_at"])
            raise  # no answer at all: the outcome is unknown, the next run takes a fresh slot
    attachment.uploaded_at = timezone.now()
    attachment.save(update_fields=["uploaded_at"])
    step_record(order, "uploaded", f"{attachment.name} ({attachment.size} bytes)")


def resources(attachments: list[OrderDocument]) -> list[dict]:
    """The PATCH's `resources`: the slots the documents were uploaded to."""
    return [attachment.upload_slot().resource() for attachment in attachments]
