"""Events out: each stored event POSTed to its connection's endpoint, signed, at least once, in order.

A relay (`events_relay`, a chore of every worker's housekeeping loop, `partner.core.housekeeping`)
finds the events due: the oldest pending event of each (connection, order) whose connection is
enabled, that is due (`next_attempt_at`), and of whose (connection, order) no event is held by a
worker. It takes each one's lease (`partner.core.leases`) and hands it to a worker in the message
(`connector.event_send`); the worker sends it under that lease (`event_send`). So an order's events
go one at a time and in order, never two at once to one endpoint for one order, and a worker that
dies mid-send leaves a lease that runs out: the housekeeping hands the event back and it is sent
again (the receiver dedupes by `webhook-id`).

Each try is one `EventAttempt` (status, duration, the answer's start). Any 2xx delivers the event;
anything else (another status, a timeout, no connection) is tried again (`retry_at`) after the
project's one backoff (`partner.core.retries.backoff`: a wait drawn below a ceiling that starts at
CONNECTOR_RETRY_BACKOFF, 5 s, and doubles per try up to CONNECTOR_RETRY_BACKOFF_MAX, 10 h), for
CONNECTOR_RETRY_PATIENCE (a day) from the event's first failed try: the last try is at that
moment, and when it fails too the event fails, the connection is disabled and whoever it names is
told (`connection_disabled_tell`: an e-mail by the task that retries, once that commits). At least
16 tries in all, 18 on average, over Svix's day.

The budget is time, not a count of tries, as the waits the service asks for are bounded in
`partner.core.retries`: a wait drawn near 0 (full jitter) costs one early try more, never a
shorter day, and the relay takes it at its next round (CONNECTOR_RELAY_INTERVAL) at the soonest.
Only a try that got no answer waits at least one more CONNECTOR_SEND_TIMEOUT (as a task waits at
least the Retry-After it was sent): the endpoint may still be working on it, and the next try of
the event must not reach it meanwhile. Staff replay one event or everything since a time
(`partner.connector.services`): a replayed event has a day of its own again.

Signatures are the Standard Webhooks ones (`standardwebhooks`, its reference Python library): one
`v1,<base64 HMAC-SHA256>` over `id.timestamp.body` per secret of the connection, so a receiver
holding either secret of a rotation verifies.
"""

import contextlib
import json
import logging
import socket
import threading
import time
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import requests
import urllib3
from django.conf import settings
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from requests.adapters import HTTPAdapter
from standardwebhooks.webhooks import Webhook
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from partner.connector.models import Connection, Event, EventAttempt, EventState
from partner.connector.services import endpoint_problem
from partner.core.enqueue import rows_relay
from partner.core.housekeeping import Chore
from partner.core.leases import Lease, LeaseLost, lease_free, lease_kept, lease_until, leases_expired_free
from partner.core.mail import mail_send_enqueue
from partner.core.retries import backoff
from partner.core.returning import update_returning

logger = logging.getLogger(__name__)

SEND_TASK = "connector.event_send"
ANSWER_KEPT = 1000  # bytes of an endpoint's answer read and kept per attempt; the rest is never read
BATCH = 100


def event_body(event: Event) -> bytes:
    return json.dumps(event.payload, separators=(",", ":"), sort_keys=True).encode()


def signature_headers(event: Event, secrets: list[str], *, now: datetime | None = None) -> dict:
    """The Standard Webhooks headers of one send: webhook-id, webhook-timestamp and one signature per secret."""
    now = now or timezone.now()
    body = event_body(event).decode()
    signatures = [Webhook(secret).sign(event.message_id, now, body) for secret in secrets]
    return {
        "webhook-id": event.message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": " ".join(signatures),
        "content-type": "application/json",
        "user-agent": "partner-connector/1",
    }


# The relay ---------------------------------------------------------------------------------------


def events_due(now: datetime):
    """The events to send now: the oldest pending one of each (connection, order), due, free, and of
    a (connection, order) no worker is sending an event of. Never one of a connection without an
    endpoint (switched from push to pull while it waited): no worker could send it, so handing it
    out again each round was a busy loop; it waits, in the feed, for an endpoint to come back."""
    same_order = Event.objects.filter(connection=OuterRef("connection"), order=OuterRef("order"))
    return (
        Event.objects.filter(state=EventState.PENDING, connection__enabled=True)
        .exclude(connection__endpoint_url="")
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(lease_free(now))
        .exclude(Exists(same_order.filter(state=EventState.PENDING, pk__lt=OuterRef("pk"))))
        .exclude(Exists(same_order.filter(claimed_until__gte=now)))
        .order_by("pk")
    )


def events_relay(*, limit: int = BATCH) -> int:
    """Take the lease of each event due and hand it to a worker; how many went. The relay's shape
    (`partner.core.enqueue.rows_relay`): the leases are taken, the tasks published as one batch,
    and the leases committed; when the broker takes none, no lease is taken and the events wait."""

    def take() -> list[dict]:
        now = timezone.now()
        due = list(events_due(now).values_list("pk", flat=True)[:limit])
        if not due:
            return []
        until = lease_until(now)
        free = Event.objects.filter(pk__in=due, state=EventState.PENDING).filter(lease_free(now))
        taken = sorted(event.pk for event in update_returning(free, claimed_until=until))
        return [{"event_id": pk, "lease_until": until.isoformat()} for pk in taken]

    return rows_relay(SEND_TASK, take, what="event(s)")


def relay_chore(*, interval: float) -> Chore:
    return Chore(name="connector events", run=lambda: events_relay() >= BATCH, interval=interval)


def events_left_hand_back() -> int:
    """Free the events whose worker died while sending them (the relay takes them again); how many."""
    return len(leases_expired_free(Event.objects.filter(state=EventState.PENDING)))


# The send ----------------------------------------------------------------------------------------


class _Exchange:
    """One send's connections, shut when its deadline passes (a timer), so that no answer, however
    slowly it drips, holds the worker past CONNECTOR_SEND_TIMEOUT: the socket's own timeouts bound
    each read, never the sum of them."""

    current = threading.local()

    def __init__(self):
        self.connections, self.lock, self.over = [], threading.Lock(), False

    def watch(self, connection) -> None:
        with self.lock:
            self.connections.append(connection)
            if self.over:
                connection.sock and _shut(connection.sock)

    def shut(self) -> None:
        with self.lock:
            self.over = True
            for connection in self.connections:
                if connection.sock is not None:
                    _shut(connection.sock)


def _shut(sock) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once; the owner closes it


class _WatchedHTTP(HTTPConnection):
    def connect(self):
        super().connect()
        if exchange := getattr(_Exchange.current, "value", None):
            exchange.watch(self)


class _WatchedHTTPS(HTTPSConnection):
    def connect(self):
        super().connect()
        if exchange := getattr(_Exchange.current, "value", None):
            exchange.watch(self)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTP


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPS


class _WatchedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


def _post(connection: Connection, event: Event) -> tuple[int | None, str, int]:
    """POST the event: (status or None, the answer's start or the error, milliseconds).

    The whole exchange (connect, send, the status and at most ANSWER_KEPT bytes of the answer) ends
    by CONNECTOR_SEND_TIMEOUT: the answer is streamed, only its kept start is read, and the
    connection is closed; a timer shuts the socket at the deadline whatever it is waiting on. A
    status that arrived in time counts even if the rest of the answer did not."""
    limit = settings.CONNECTOR_SEND_TIMEOUT
    started = time.monotonic()
    deadline = started + limit
    exchange = _Exchange()
    timer = threading.Timer(limit, exchange.shut)
    timer.daemon = True
    status, kept = None, b""
    _Exchange.current.value = exchange
    timer.start()
    try:
        with requests.Session() as session:
            session.mount("http://", _WatchedAdapter())
            session.mount("https://", _WatchedAdapter())
            headers = {**signature_headers(event, connection.secrets()), "accept-encoding": "identity"}
            with session.post(
                connection.endpoint_url,
                data=event_body(event),
                headers=headers,
                timeout=limit,
                allow_redirects=False,
                stream=True,
            ) as answer:
                status = answer.status_code
                while len(kept) < ANSWER_KEPT and time.monotonic() < deadline:
                    piece = answer.raw.read1(ANSWER_KEPT - len(kept))
                    if not piece:
                        break
                    kept += piece
        text = kept.decode("utf-8", "replace")
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        if status is not None:  # the answer's status came; its body was cut at the deadline
            text = kept.decode("utf-8", "replace")
        elif exchange.over or time.monotonic() >= deadline:
            text = f"Timeout: no answer within {limit:g} s"
        else:
            text = why_unanswered(exc) if isinstance(exc, requests.RequestException) else type(exc).__name__
    finally:
        timer.cancel()
        _Exchange.current.value = None
    return status, text, int((time.monotonic() - started) * 1000)


def _causes(exc: BaseException):
    """The exception and every one it wraps (requests wraps urllib3's, which wraps the socket's)."""
    seen, stack = set(), [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack += [current.__cause__, current.__context__, getattr(current, "reason", None)]
        stack += [arg for arg in getattr(current, "args", ()) if isinstance(arg, BaseException)]


def why_unanswered(exc: requests.RequestException) -> str:
    """Why a POST got no answer, in an operator's words (no URL: the caller names the endpoint)."""
    causes = list(_causes(exc))
    if isinstance(exc, requests.Timeout):
        return f"Timeout: no answer within {settings.CONNECTOR_SEND_TIMEOUT:g} s"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS handshake failed (the endpoint's certificate or TLS setup)"
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return "connection refused (nothing listens at the endpoint's address and port)"
    if any(isinstance(cause, socket.gaierror) for cause in causes):
        return "host name not found (DNS)"
    return f"{type(exc).__name__}: could not connect"


def endpoint_shown(url: str) -> str:
    """The endpoint as a log line names it: scheme, host, port and path, never a query (it may hold a token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def retry_at(*, attempts: int, failing_since: datetime, now: datetime, answered: bool = True) -> datetime | None:
    """When an event whose `attempts`-th try failed at `now`, failing since `failing_since`, is tried
    again: after the backoff, and at the end of its patience at the latest; None when it is over.

    A try that got no answer (`answered` False: a timeout) waits at least CONNECTOR_SEND_TIMEOUT
    more, whatever the draw: the endpoint may still be working on the POST we stopped waiting for,
    and the next one should not reach it while it does."""
    give_up_at = failing_since + timedelta(seconds=settings.CONNECTOR_RETRY_PATIENCE)
    if now >= give_up_at:
        return None
    wait = backoff(attempts - 1, base=settings.CONNECTOR_RETRY_BACKOFF, ceiling=settings.CONNECTOR_RETRY_BACKOFF_MAX)
    if not answered:
        wait = max(wait, settings.CONNECTOR_SEND_TIMEOUT)
    return min(now + timedelta(seconds=wait), give_up_at)


def event_send(*, event_id: int, lease_until: datetime) -> bool | None:
    """Send one event under the lease the relay took; True delivered, False to be tried again or
    failed, None when it was not this worker's to send (already delivered, lease lost)."""
    lease = Lease(Event, event_id, lease_until)
    event = Event.objects.select_related("connection").filter(pk=event_id).first()
    if event is None or event.state != EventState.PENDING:
        lease.release()
        return None
    connection = event.connection
    if not connection.enabled or not connection.endpoint_url:
        lease.release()
        return None
    with lease_kept(lease):
        try:
            lease.confirm(attempts=F("attempts") + 1)  # the fence, and the try counted before it is made
        except LeaseLost:
            return None
        started_at = timezone.now()
        if refused := endpoint_problem(connection.endpoint_url):  # the rule as it is now, not when it was saved
            status, text, duration = None, f"not sent: {refused}", 0
        else:
            status, text, duration = _post(connection, event)
    delivered = status is not None and 200 <= status < 300
    _outcome_record(event, lease, started_at=started_at, status=status, text=text, duration=duration, ok=delivered)
    return delivered


def _outcome_record(event: Event, lease: Lease, *, started_at, status, text, duration, ok: bool) -> None:
    now = timezone.now()
    attempts = event.attempts + 1
    connection = Connection.objects.filter(pk=event.connection_id)
    with transaction.atomic():
        EventAttempt.objects.create(
            event=event, started_at=started_at, duration_ms=duration, status_code=status, answer=text, succeeded=ok
        )
        if ok:
            lease.release(
                state=EventState.DELIVERED, delivered_at=now, last_error="", next_attempt_at=None, failing_since=None
            )
            connection.update(last_success_at=now, failing_since=None, consecutive_failures=0)
            return
        error = f"status {status}" if status is not None else text
        failing_since = event.failing_since or now
        again = retry_at(attempts=attempts, failing_since=failing_since, now=now, answered=status is not None)
        connection.filter(failing_since__isnull=True).update(failing_since=now)
        connection.update(last_failure_at=now, consecutive_failures=F("consecutive_failures") + 1)
        if again is not None:
            lease.release(last_error=error[:2000], next_attempt_at=again, failing_since=failing_since)
            _failure_log(event, error, attempts, f"again at {again:%Y-%m-%d %H:%M:%S} UTC")
            return
        lease.release(
            state=EventState.FAILED, last_error=error[:2000], next_attempt_at=None, failing_since=failing_since
        )
        reason = f"{event.type} {event.message_id} failed after {attempts} tries ({error[:200]})"
        if connection.filter(enabled=True).update(enabled=False, disabled_reason=reason):
            connection_disabled_tell(Connection.objects.get(pk=event.connection_id), reason)
    _failure_log(event, error, attempts, "given up, connection disabled")


def _failure_log(event: Event, error: str, attempts: int, then: str) -> None:
    """One warning per failed try, in an operator's words: the connection, the event, where (without
    the endpoint's query), why, and what follows."""
    logger.warning(
        "connector %s: %s %s to %s failed (%s), try %s; %s",
        event.connection.name,
        event.type,
        event.message_id,
        endpoint_shown(event.connection.endpoint_url),
        error[:200],
        attempts,
        then,
    )


def connection_disabled_tell(connection: Connection, reason: str) -> None:
    """E-mail whoever the connection names that its endpoint keeps failing, once the caller's
    transaction (the one that disabled it) commits, by the task that retries (`partner.core.mail`).
    `reason` names the event by its type and webhook-id: no order or borrower data."""
    if not connection.notify_email:
        return
    mail_send_enqueue(
        subject=f"Connection {connection.name} disabled: its endpoint keeps failing",
        body=f"{reason}\nEvents wait until the connection is enabled again; replay the failed ones from the admin.\n",
        to=[connection.notify_email],
    )
