"""Request-side intake of the service's webhooks: verify, parse, store; nothing else.

`webhook_receive` is called by the view with the raw bytes. It verifies the signature before
parsing anything and stores the notification as `received` (a duplicate delivery hits the
unique key and is only counted). That single INSERT is all the request does: the broker is not
on the webhook's path (the outbox relay hands the row over a moment later, `outbox.py`), so a
broker outage never slows or fails an answer, and what was answered 202 is committed.

A notification no handler takes (`dispatch.handler_for`) is stored as `ignored`. One signed with
a product's own secret but naming another product is refused (401) and kept as `refused`.
"""

import contextlib
import hashlib
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from partner.catalog.selectors import product_signing_secrets
from partner.core.logging import control_characters_escape
from partner.inbox.dispatch import handler_for
from partner.inbox.models import Notification, NotificationState
from partner.inbox.notifications import NotANotification, ParsedNotification, notification_parse
from partner.platform.signatures import signature_matches

logger = logging.getLogger(__name__)

# Headers never stored: they carry credentials, or the signature itself.
_UNSTORED_HEADERS = {"authorization", "cookie", "proxy-authorization", "x-svc-pat"}


class WebhookSignatureInvalid(Exception):
    """The signature header is missing or does not match any accepted secret."""


class WebhookSignerMismatch(WebhookSignatureInvalid):
    """Signed with a product's own secret, but the notification names another product."""


class WebhookNotANotification(Exception):
    """Signed correctly, but not a webhook notification."""


@dataclass(frozen=True)
class SigningSecrets:
    """The secrets a webhook may be signed with, and which product each may sign for.

    The deployment's secrets (SVC_SIGNING_SECRETS, several during a rotation) sign for any
    product; a product's own secret signs only for notifications naming that product
    (`meta.instanceId`), so one product's secret cannot speak for another.
    """

    deployment: frozenset[str]
    products: dict[str, frozenset[str]]  # a product's own secret: the product(s) it signs for
    read_at: float  # time.monotonic() when they were read

    def all(self) -> tuple[str, ...]:
        return (*self.deployment, *(s for s in self.products if s not in self.deployment))

    def signs_for(self, matched: list[str], product_name: str) -> bool:
        """Whether a signature made with one of `matched` may speak for `product_name`."""
        return any(s in self.deployment or product_name in self.products.get(s, ()) for s in matched)

    def products_of(self, matched: list[str]) -> list[str]:
        return sorted({name for s in matched for name in self.products.get(s, ())})


# The decrypted secrets are kept in memory this long per process, so that a webhook, accepted
# or refused, costs no query and no decryption for them. A refused one reads them again first
# (a product's secret may have just been set), but at most once per _SECRETS_REREAD seconds: a
# flood of forged webhooks costs no query either.
_SECRETS_TTL = 30.0
_SECRETS_REREAD = 2.0
_secrets: SigningSecrets | None = None


def signing_secrets(*, max_age: float = _SECRETS_TTL) -> SigningSecrets:
    """The accepted secrets, read from the settings and the products at most `max_age` seconds ago."""
    global _secrets
    now = time.monotonic()
    if _secrets is None or now - _secrets.read_at > max_age:
        products: dict[str, set[str]] = {}
        for name, secret in product_signing_secrets():
            products.setdefault(secret, set()).add(name)
        _secrets = SigningSecrets(
            deployment=frozenset(s for s in settings.SVC_SIGNING_SECRETS if s),
            products={secret: frozenset(names) for secret, names in products.items()},
            read_at=now,
        )
    return _secrets


def signing_secrets_forget() -> None:
    """Drop the cached secrets (after a product's secret changed)."""
    global _secrets
    _secrets = None


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


def _reread(body: bytes, signature: str | None, secrets: SigningSecrets, matched: list[str]):
    """Before a refusal: the secrets read again (at most every _SECRETS_REREAD s) and matched again."""
    reread = signing_secrets(max_age=_SECRETS_REREAD)
    if reread is secrets:
        return secrets, matched
    return reread, signature_matches(body, signature, reread.all())


def webhook_receive(*, body: bytes, signature: str | None, headers, remote_addr: str | None) -> int:
    """Verify and store one webhook; the id of its notification (the first copy's, for a duplicate)."""
    secrets = signing_secrets()
    matched = signature_matches(body, signature, secrets.all())  # once per webhook, however it ends
    if not matched:
        secrets, matched = _reread(body, signature, secrets, matched)
        if not matched:
            raise WebhookSignatureInvalid
    try:
        parsed = notification_parse(body)
    except NotANotification as exc:
        raise WebhookNotANotification(str(exc)) from None
    if not secrets.signs_for(matched, parsed.product_name):
        secrets, matched = _reread(body, signature, secrets, matched)
    if not secrets.signs_for(matched, parsed.product_name):
        _unbound_store(
            body=body, parsed=parsed, signers=secrets.products_of(matched), headers=headers, remote_addr=remote_addr
        )
        raise WebhookSignerMismatch

    handled = handler_for(parsed.resource_type, parsed.event_type) is not None
    try:
        with _single_insert():
            notification = Notification.objects.create(
                **_kept_fields(parsed, body=body, headers=headers, remote_addr=remote_addr),
                dedupe_key=parsed.dedupe_key,
                # `received` waits for the relay; nothing else happens in the request.
                state=NotificationState.RECEIVED if handled else NotificationState.IGNORED,
            )
    except IntegrityError:
        # The same notification again (or two copies at once): count it, process it once.
        return _duplicate_count(parsed.dedupe_key)

    if not handled:
        logger.info("ignored notification %s: %s %s", notification.pk, parsed.resource_type, parsed.event_type)
    return notification.pk


def _kept_fields(parsed: ParsedNotification, *, body: bytes, headers, remote_addr: str | None) -> dict:
    return {
        "event_id": parsed.event_id,
        "resource_type": parsed.resource_type,
        "resource_id": parsed.resource_id,
        "event_type": parsed.event_type,
        "event_time": parsed.event_time,
        "product_name": parsed.product_name,
        "resource_ref": parsed.resource_ref,
        "body": body.decode("utf-8"),
        "headers": headers_storable(headers),
        "remote_addr": remote_addr,
    }


def _duplicate_count(dedupe_key: str) -> int:
    Notification.objects.filter(dedupe_key=dedupe_key).update(duplicates=F("duplicates") + 1)
    return Notification.objects.only("pk").get(dedupe_key=dedupe_key).pk


def _unbound_store(*, body: bytes, parsed: ParsedNotification, signers: list[str], headers, remote_addr) -> None:
    """Keep a notification signed with another product's secret, as `refused`, for staff to see.

    Its key is the body's digest, never the notification's own: a forged copy must not take the
    place of the genuine notification, which is still accepted when it comes.
    """
    named = parsed.product_name or "no product"
    reason = f"signed with the secret of {', '.join(signers)}, but names {named}: refused, not processed"
    logger.warning("webhook refused: %s (%s %s)", reason, parsed.resource_type, parsed.resource_id)
    dedupe_key = "refused:" + hashlib.sha256(body).hexdigest()
    try:
        with _single_insert():
            Notification.objects.create(
                **_kept_fields(parsed, body=body, headers=headers, remote_addr=remote_addr),
                dedupe_key=dedupe_key,
                state=NotificationState.REFUSED,
                last_error=reason,
            )
    except IntegrityError:
        _duplicate_count(dedupe_key)
