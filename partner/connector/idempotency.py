"""Idempotency-Key on every POST of the API (Stripe's convention, the IETF HTTP API draft).

The first request with a key runs and its answer is stored with the key, in the transaction that
made the answer; a retry with the same key and the same request gets that answer again and changes
nothing; the same key with another request is refused (422). The key is inserted first, so a
retry that arrives while the first is still running waits for it (the unique index) and replays
its answer. A request refused by a rule stores nothing (its transaction rolls back): sent again,
it is judged again. Keys are forgotten after CONNECTOR_IDEMPOTENCY_HOURS, and the retention's
purge deletes them past that window (`partner.connector.retention`).

What is kept of an answer is what replays it: its status and the ids of what it made (`{"order",
"delivery"}`, `{"document"}`: a few dozen bytes), never the body, which carries the whole order and
grew with each answer (400 status updates on one order stored 13 MB). The view renders the body
from those ids the first time and on each replay (`views.answer_body`).
"""

import hashlib
import json
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from partner.connector.models import Connection, IdempotentAnswer
from partner.core.errors import ApplicationError

KEY_MAX = 255


class IdempotencyKeyMissing(ApplicationError):
    status_code = 400
    slug = "idempotency-key-missing"
    title = "Every POST takes an Idempotency-Key"


class IdempotencyKeyReused(ApplicationError):
    status_code = 422
    slug = "idempotency-key-reused"
    title = "The Idempotency-Key was used with another request"


def fingerprint(*, method: str, path: str, data: dict, files: dict) -> str:
    """SHA-256 of what makes two requests the same: method, path, fields and the files' bytes."""
    digest = hashlib.sha256()
    fields = {key: data[key] for key in data if key not in files}
    digest.update(json.dumps([method, path, fields], sort_keys=True, default=str).encode())
    for name in sorted(files):
        upload = files[name]
        upload.seek(0)
        digest.update(name.encode() + b"\0" + hashlib.sha256(upload.read()).digest())
        upload.seek(0)
    return digest.hexdigest()


def answer_once(
    *, connection: Connection, key: str, request_fingerprint: str, run: Callable[[], tuple[int, dict]]
) -> tuple[int, dict]:
    """(status, made) of `run()` the first time `key` is used, the stored ones after: `made` is the
    small dict of ids the answer's body is rendered from."""
    key = (key or "").strip()
    if not key or len(key) > KEY_MAX:
        raise IdempotencyKeyMissing(f"Send an Idempotency-Key header (1 to {KEY_MAX} characters) with every POST.")
    forgotten = timezone.now() - timedelta(hours=settings.CONNECTOR_IDEMPOTENCY_HOURS)
    IdempotentAnswer.objects.filter(connection=connection, key=key, created_at__lt=forgotten).delete()
    with transaction.atomic():
        try:
            with transaction.atomic():
                row = IdempotentAnswer.objects.create(
                    connection=connection, key=key, fingerprint=request_fingerprint, status_code=0, body={}
                )
        except IntegrityError:
            row = IdempotentAnswer.objects.get(connection=connection, key=key)
            if row.fingerprint != request_fingerprint:
                raise IdempotencyKeyReused(
                    "This Idempotency-Key was used with another request: use a new key for a new request."
                ) from None
            return row.status_code, row.body
        status, made = run()
        IdempotentAnswer.objects.filter(pk=row.pk).update(status_code=status, body=made)
    return status, made
