"""Request-side intake of the service's webhooks: verify, parse, store; nothing else.

`webhook_receive` is called by the view with the raw bytes. It verifies the signature before
parsing anything and stores the notification as `received` (a duplicate delivery hits the
unique key and is only counted). That single INSERT is all the request does: the broker is not
on the webhook's path (the outbox relay hands the row over a moment later, `outbox.py`), so a
broker outage never slows or fails an answer, and what was answered 202 is committed.

A notification no handler takes (`dispatch.handler_for`) is stored as `ignored`.
"""

import contextlib
import logging
import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from partner.catalog.selectors import signing_secrets_all
from partner.core.logging import control_characters_escape
from partner.inbox.dispatch import handler_for
from partner.inbox.models import Notification, NotificationState
from partner.inbox.notifications import NotANotification, notification_parse
from partner.platform.signatures import signature_verify

logger = logging.getLogger(__name__)

# Headers never stored: they carry credentials, or the signature itself.
_UNSTORED_HEADERS = {"authorization", "cookie", "proxy-authorization", "x-svc-pat"}


class WebhookSignatureInvalid(Exception):
    """The signature header is missing or does not match any accepted secret."""


class WebhookNotANotification(Exception):
    """Signed correctly, but not a webhook notification."""


# Product secrets are read from the database at most once per this many seconds
# per process: a webhook must not cost a query for them.
_SECRETS_TTL = 30.0
_secrets_cache: tuple[float, tuple[str, ...]] = (0.0, ())


def signing_secrets() -> tuple[str, ...]:
    """The secrets a webhook may be signed with: the settings' (rotation) and every product's own."""
    global _secrets_cache
    now = time.monotonic()
    fetched_at, secrets = _secrets_cache
    if now - fetched_at > _SECRETS_TTL or not secrets:
        secrets = tuple(dict.fromkeys([*settings.SVC_SIGNING_SECRETS, *signing_secrets_all()]))
        _secrets_cache = (now, secrets)
    return secrets


def signing_secrets_forget() -> None:
    """Drop the cached secrets (after a product's secret changed)."""
    global _secrets_cache
    _secrets_cache = (0.0, ())


def headers_storable(headers) -> dict:
    """The request headers worth keeping for a person reading the inbox: no credential, no signature.

    Control characters are kept as escapes (`\\x00`): gunicorn refuses them in a header, but a
    server that passes them on must not make the row unstorable (PostgreSQL takes no NUL in jsonb).
    """
    signature_header = settings.SVC_SIGNATURE_HEADER.lower()
    pat_header = settings.SVC_PAT_HEADER.lower()
    return {
        control_characters_escape(name): control_characters_escape(value[:500])
        for name, value in headers.items()
        if name.lower() not in _UNSTORED_HEADERS and name.lower() not in (signature_header, pat_header)
    }


def _single_insert():
    """The transaction around the one INSERT of a notification.

    In autocommit mode (a request: the view is non-atomic) a single INSERT is
    atomic and committed when it returns, so no BEGIN/COMMIT round trips are
    spent on it (the profile of the intake showed them). Inside a caller's
    transaction a savepoint keeps a duplicate key from spoiling that transaction.
    """
    if transaction.get_connection().in_atomic_block:
        return transaction.atomic()
    return contextlib.nullcontext()


def webhook_receive(*, body: bytes, signature: str | None, headers, remote_addr: str | None) -> int:
    """Verify and store one webhook; the id of its notification (the first copy's, for a duplicate)."""
    if not signature_verify(body, signature, signing_secrets()):
        # A product secret changed in the last seconds? Read them again once before refusing.
        signing_secrets_forget()
        if not signature_verify(body, signature, signing_secrets()):
            raise WebhookSignatureInvalid
    try:
        parsed = notification_parse(body)
    except NotANotification as exc:
        raise WebhookNotANotification(str(exc)) from None

    handled = handler_for(parsed.resource_type, parsed.event_type) is not None
    try:
        with _single_insert():
            notification = Notification.objects.create(
                dedupe_key=parsed.dedupe_key,
                event_id=parsed.event_id,
                resource_type=parsed.resource_type,
                resource_id=parsed.resource_id,
                event_type=parsed.event_type,
                event_time=parsed.event_time,
                product_name=parsed.product_name,
                resource_ref=parsed.resource_ref,
                body=body.decode("utf-8"),
                headers=headers_storable(headers),
                remote_addr=remote_addr,
                # `received` waits for the relay; nothing else happens in the request.
                state=NotificationState.RECEIVED if handled else NotificationState.IGNORED,
            )
    except IntegrityError:
        # The same notification again (or two copies at once): count it, process it once.
        Notification.objects.filter(dedupe_key=parsed.dedupe_key).update(duplicates=F("duplicates") + 1)
        return Notification.objects.only("pk").get(dedupe_key=parsed.dedupe_key).pk

    if not handled:
        logger.info("ignored notification %s: %s %s", notification.pk, parsed.resource_type, parsed.event_type)
    return notification.pk
