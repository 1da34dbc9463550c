"""Request-side intake of the service's webhooks: verify, parse, store; nothing else.

`webhook_receive` is called by the view with the raw bytes. It verifies the signature before
parsing anything and stores the notification as `received` (a duplicate delivery meets the
unique key and is only counted). That single INSERT is all the request does: the broker is not
on the webhook's path (the outbox relay hands the row over a moment later, `outbox.py`), so a
broker outage never slows or fails an answer, and what was answered 202 is committed.

The INSERT is written once per database from the model's own fields (`NotificationInsert`):
`ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`, so a duplicate, even a concurrent one, is told
by the unique key without an error (and without a savepoint inside a caller's transaction). It runs
on Django's cursor with every value adapted by its field, as the ORM's own INSERT would (a constant
default once, when the INSERT is written), so a query log, an execute wrapper and the statement budget
see it as they see any other statement.

A notification no handler takes (`dispatch.handler_for`) is stored as `ignored`, answered 202 like any
other, and counted (`partner_webhooks_unhandled`; the dashboard lists the last hour's): a profile
whose URN words are not the service's would otherwise drop every order in silence. One signed with
a product's own secret but naming another product is refused (401) and kept as `refused`, as
evidence that costs little: its headers, the body's digest (its key) and the first
INBOX_REFUSED_EXCERPT_BYTES of the body, never the whole of it; at most INBOX_REFUSED_MAX_PER_WINDOW
such rows per signing product every INBOX_REFUSED_WINDOW_SECONDS (counted in the shared cache), the
rest counted (`partner_webhooks_refused_unstored`) and logged once per window, not stored; and they
expire after RETENTION_REFUSED_NOTIFICATION_DAYS (`retention.py`).
"""

import hashlib
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connections, router
from django.db.models import F
from django.utils import timezone

from partner.catalog.selectors import product_signing_secrets
from partner.core.logging import control_characters_escape
from partner.inbox.dispatch import handler_for
from partner.inbox.errors import WebhookSignatureInvalid, WebhookSignerMismatch
from partner.inbox.metrics import REFUSED_UNSTORED, WEBHOOKS_UNHANDLED
from partner.inbox.models import Notification, NotificationState
from partner.inbox.notifications import ParsedNotification, notification_parse
from partner.platform.signatures import signature_matches

logger = logging.getLogger(__name__)

# Headers never stored: they carry credentials, or the signature itself.
_UNSTORED_HEADERS = {"authorization", "cookie", "proxy-authorization", "x-svc-pat"}


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
    unstored = {*_UNSTORED_HEADERS, settings.SVC_SIGNATURE_HEADER.lower(), settings.SVC_PAT_HEADER.lower()}
    kept = {name: value[:500] for name, value in headers.items() if name.lower() not in unstored}
    # Escaping works character by character: when the whole text has nothing to escape, no part has.
    text = "".join(f"{name}{value}" for name, value in kept.items())
    if control_characters_escape(text) == text:
        return kept
    return {control_characters_escape(name): control_characters_escape(value) for name, value in kept.items()}


class NotificationInsert:
    """The one INSERT of a notification, written once per database from the model's fields.

    Every concrete field but the key is a column: the value given, else `now` for the
    auto_now(_add) fields, else the field's default, each adapted by the field itself
    (`get_db_prep_save`, what the ORM's INSERT does). A default that is a constant (not a callable)
    is adapted once, by its field, when the INSERT is written: the same value adapted again would
    give the same parameter on every webhook. `execute` returns the new row's id, or None when the
    dedupe key is taken.
    """

    _by_vendor: dict[str, "NotificationInsert"] = {}

    def __init__(self, db):
        meta = Notification._meta
        quote = db.ops.quote_name
        self.fields = [field for field in meta.concrete_fields if not field.primary_key]
        self.now_fields = {
            field.attname
            for field in self.fields
            if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        }
        # Written for one backend (`for_connection`: one per vendor), so adapted for it once.
        self.constant_defaults = {
            field.attname: field.get_db_prep_save(field.get_default(), db)
            for field in self.fields
            if field.attname not in self.now_fields and not (field.has_default() and callable(field.default))
        }
        table, key, pk = quote(meta.db_table), quote(meta.get_field("dedupe_key").column), quote(meta.pk.column)
        columns = ", ".join(quote(field.column) for field in self.fields)
        placeholders = ", ".join(["%s"] * len(self.fields))
        # Names from the model's metadata, quoted by the backend; every value is a parameter.
        insert = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"  # noqa: S608
        self.sql = f"{insert} ON CONFLICT ({key}) DO NOTHING RETURNING {pk}"

    @classmethod
    def for_connection(cls, db) -> "NotificationInsert":
        insert = cls._by_vendor.get(db.vendor)
        if insert is None:
            insert = cls._by_vendor[db.vendor] = cls(db)
        return insert

    def params(self, values: dict, db) -> list:
        now = timezone.now()
        params = []
        for field in self.fields:
            name = field.attname
            if name in values:
                value = values[name]
            elif name in self.now_fields:
                value = now
            elif name in self.constant_defaults:
                params.append(self.constant_defaults[name])
                continue
            else:
                value = field.get_default()
            params.append(field.get_db_prep_save(value, db))
        return params

    def execute(self, db, values: dict) -> int | None:
        params = self.params(values, db)
        with db.cursor() as cursor:
            cursor.execute(self.sql, params)
            row = cursor.fetchone()
        return row[0] if row else None


def notification_insert(**values) -> int | None:
    """Store one notification (values by attribute name); its id, or None when its dedupe key is taken.

    The INSERT is the connection's health check: CONN_HEALTH_CHECKS would spend a `SELECT 1` round
    trip on every webhook before it (Django runs it before a request's first statement), so it is
    marked done. A connection kept from an earlier request that fails the INSERT (the server
    restarted, a failover) is closed and the INSERT tried once more on a new one, as the health
    check would have done; a first attempt that did commit makes the second a duplicate of itself
    (the unique key: stored once, counted as a duplicate). Any other failure is the caller's (503).
    """
    db = connections[router.db_for_write(Notification)]  # the wrapper itself, not the `connection` proxy
    insert = NotificationInsert.for_connection(db)
    reused = db.connection is not None
    if reused:
        # Django has no public way to skip CONN_HEALTH_CHECKS for one request, so this sets its
        # internal flag (Django 4.1 to 5.2, `BaseDatabaseWrapper.health_check_done`): reset to False by
        # `close_if_unusable_or_obsolete` (the `request_started` signal), read by
        # `close_if_health_check_failed` before the request's first cursor, which skips its
        # `SELECT 1` when it is True. The INSERT is this request's check. Pinned by
        # tests/inbox/test_receive.py (`..._no_health_check_first`, `test_djangos_health_check_flag_...`).
        db.health_check_done = True
    try:
        return insert.execute(db, values)
    except OperationalError:
        if not reused or db.in_atomic_block or db.is_usable():
            raise
        logger.info("webhook: the database connection was stale, storing on a new one")
        db.close()
        return insert.execute(db, values)


def _reread(body: bytes, signature: str | None, secrets: SigningSecrets, matched: list[str]):
    """Before a refusal: the secrets read again (at most every _SECRETS_REREAD s) and matched again."""
    reread = signing_secrets(max_age=_SECRETS_REREAD)
    if reread is secrets:
        return secrets, matched
    return reread, signature_matches(body, signature, reread.all())


def webhook_receive(*, body: bytes, signature: str | None, headers, remote_addr: str | None) -> int:
    """Verify and store one webhook; the id of its notification (the first copy's, for a duplicate).

    Refused (`partner.inbox.errors`): WebhookSignatureInvalid, WebhookSignerMismatch, NotANotification.
    """
    secrets = signing_secrets()
    matched = signature_matches(body, signature, secrets.all())  # once per webhook, however it ends
    if not matched:
        secrets, matched = _reread(body, signature, secrets, matched)
        if not matched:
            raise WebhookSignatureInvalid
    parsed = notification_parse(body)  # NotANotification when it is none
    if not secrets.signs_for(matched, parsed.product_name):
        secrets, matched = _reread(body, signature, secrets, matched)
    if not secrets.signs_for(matched, parsed.product_name):
        _unbound_store(
            body=body, parsed=parsed, signers=secrets.products_of(matched), headers=headers, remote_addr=remote_addr
        )
        raise WebhookSignerMismatch

    handled = handler_for(parsed.resource_type, parsed.event_type) is not None
    notification_id = notification_insert(
        **_kept_fields(parsed, body=body, headers=headers, remote_addr=remote_addr),
        dedupe_key=parsed.dedupe_key,
        # `received` waits for the relay; nothing else happens in the request.
        state=NotificationState.RECEIVED if handled else NotificationState.IGNORED,
    )
    if notification_id is None:
        # The same notification again (or two copies at once): count it, process it once.
        return _duplicate_count(parsed.dedupe_key)

    if not handled:
        WEBHOOKS_UNHANDLED.inc()
        logger.info("ignored notification %s: %s %s", notification_id, parsed.resource_type, parsed.event_type)
    return notification_id


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


def _refused_storable(signers: list[str]) -> bool:
    """Whether one more refused webhook signed with these products' secret may be stored in this
    window (INBOX_REFUSED_MAX_PER_WINDOW per INBOX_REFUSED_WINDOW_SECONDS, counted per signing product
    in the shared cache: a body may name any product, its signer is ours). Past the cap it is counted
    and, the first time in the window, logged."""
    window = settings.INBOX_REFUSED_WINDOW_SECONDS
    signer = ",".join(signers) or "-"
    bucket = int(time.time() // window)
    key = "inbox:refused:" + hashlib.sha256(f"{signer}|{bucket}".encode()).hexdigest()
    try:
        cache.add(key, 0, timeout=window)
        count = cache.incr(key)
    except Exception:  # the cache is down: store nothing rather than let a flood reach the table
        logger.warning("webhook refused and not stored: the cache that counts refusals cannot be reached")
        count = settings.INBOX_REFUSED_MAX_PER_WINDOW + 2
    if count <= settings.INBOX_REFUSED_MAX_PER_WINDOW:
        return True
    REFUSED_UNSTORED.labels(signer).inc()
    if count == settings.INBOX_REFUSED_MAX_PER_WINDOW + 1:
        logger.warning(
            "webhooks refused: more than %s signed with the secret of %s in %s s; the rest of this window "
            "are counted (partner_webhooks_refused_unstored), not stored",
            settings.INBOX_REFUSED_MAX_PER_WINDOW,
            signer,
            window,
        )
    return False


def _excerpt(body: bytes) -> str:
    """The body's first INBOX_REFUSED_EXCERPT_BYTES, cut on a character boundary."""
    return body[: settings.INBOX_REFUSED_EXCERPT_BYTES].decode("utf-8", errors="ignore")


def _unbound_store(*, body: bytes, parsed: ParsedNotification, signers: list[str], headers, remote_addr) -> None:
    """Keep a notification signed with another product's secret, as `refused`, for staff to see: its
    headers, an excerpt of its body and the body's digest, within the cap of its signer (`_refused_storable`).

    Its key is the body's digest, never the notification's own: a forged copy must not take the
    place of the genuine notification, which is still accepted when it comes.
    """
    named = parsed.product_name or "no product"
    reason = f"signed with the secret of {', '.join(signers)}, but names {named}: refused, not processed"
    logger.warning("webhook refused: %s (%s %s)", reason, parsed.resource_type, parsed.resource_id)
    if not _refused_storable(signers):
        return
    excerpt = _excerpt(body)
    if len(excerpt.encode()) < len(body):
        reason += f" (body of {len(body)} bytes: its first {len(excerpt.encode())} kept)"
    dedupe_key = "refused:" + hashlib.sha256(body).hexdigest()
    stored = notification_insert(
        **{**_kept_fields(parsed, body=body, headers=headers, remote_addr=remote_addr), "body": excerpt},
        dedupe_key=dedupe_key,
        state=NotificationState.REFUSED,
        last_error=reason,
    )
    if stored is None:
        _duplicate_count(dedupe_key)
