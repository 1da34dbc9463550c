"""Uploads of the sandbox: slots requested for a transaction (#4), then one PUT per slot (#5).

Each slot carries a one-time authorization value, stored only as a digest; an
uploaded slot is what a response's `resources` may refer to.
"""

import hmac
import secrets

from django.db import transaction as db_transaction
from django.utils import timezone

from partner.core.logging import secret_register

from . import documents
from .errors import refused
from .models import Transaction, UploadSlot
from .selectors import digest, sandbox_base_url


def upload_slots_request(*, transaction_id: str, items, base_url: str | None = None) -> list[dict]:
    """Upload slots (#4), one per item and in order, each with a one-time authorization value."""
    base = (base_url or sandbox_base_url()).rstrip("/")
    problems = documents.slot_request_problems(items)
    if problems:
        raise refused("the slot request does not conform", problems=problems)
    if not Transaction.objects.filter(pk=transaction_id).exists():
        raise refused("no such transaction", status=404, code="not_found")
    answer, rows = [], []
    for position, item in enumerate(items):
        authorization = f"SvcUpload {secrets.token_urlsafe(32)}"
        secret_register(authorization)
        slot = UploadSlot(
            transaction_id=transaction_id,
            position=position,
            name=item["name"],
            mime_type=item["mimeType"],
            authorization_digest=digest(authorization),
        )
        rows.append(slot)
        answer.append(
            {
                "id": slot.id,
                "name": slot.name,
                "mimeType": slot.mime_type,
                "location": f"{base}/uploads/{slot.id}",
                "authorization": authorization,
            }
        )
    UploadSlot.objects.bulk_create(rows)
    return answer


def upload_accept(*, slot_id: str, authorization: str | None, content_type: str | None, content: bytes) -> UploadSlot:
    """The upload (#5): right one-time authorization, Content-Type equal to the slot's mimeType."""
    with db_transaction.atomic():
        slot = UploadSlot.objects.select_for_update().filter(pk=slot_id).first()
        if slot is None:
            raise refused("no such upload location", status=404, code="not_found")
        if not authorization or not hmac.compare_digest(slot.authorization_digest, digest(authorization)):
            raise refused("the upload authorization is missing or wrong", status=401, code="invalid_authorization")
        if slot.uploaded_at is not None:
            raise refused("this upload authorization was already used", status=409, code="already_uploaded")
        if (content_type or "").strip().lower() != slot.mime_type.lower():
            raise refused(
                f"Content-Type must be the slot's mimeType {slot.mime_type}",
                status=415,
                code="unsupported_media_type",
            )
        slot.content = content
        slot.size = len(content)
        slot.uploaded_at = timezone.now()
        slot.save(update_fields=["content", "size", "uploaded_at", "updated_at"])
    return slot
