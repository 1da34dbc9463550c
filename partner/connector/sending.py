"""Events out: each stored event POSTed to its connection's endpoint, signed, at least once, in order.

A relay (`events_relay`, a chore of every worker's housekeeping loop, `partner.core.housekeeping`)
finds the events due: the oldest pending event of each (connection, order) whose connection is
enabled, that is due (`next_attempt_at`), and of whose (connection, order) no event is held by a
worker. It takes each one's lease (`partner.core.leases`) and hands it to a worker in the message
(`connector.event_send`, on the events' queue beside the orders': `config/celery.py`); the worker
sends it under that lease (`event_send`). A send that delivered hands its place on in the same thread
(`events_send`, `_place_hand_on`): in the transaction that releases its lease, the lease of the next
event due, its own order's next one first, so the sends in flight never grow and the relay's lock
is not needed; a send that ended otherwise, or found nothing due, wakes its process's relay
(`relay_soon`). An event stored by a worker's task wakes that worker's relay when it commits
(`events.event_store`), not at its next round (CONNECTOR_RELAY_INTERVAL). So an order's
events go one at a time and in order, never two at once to one endpoint for one order, and a worker
that dies mid-send leaves a lease that runs out: the housekeeping hands the event back and it is sent
again (the receiver dedupes by `webhook-id`).

Each try is one `EventAttempt` (status, duration, the answer's start), sent through the outbound
module (`partner.core.outbound.exchange_kept`: the whole exchange ends by CONNECTOR_SEND_TIMEOUT,
and at most the kept start of the answer is read). Any 2xx delivers the event; anything else
(another status, a timeout, no connection) is tried again under the connector channel's give-up
policy, declared with the platform channel's in `partner.core.retries` (`EVENT_SENDS`): after the
project's one backoff (a wait drawn below a ceiling that starts at CONNECTOR_RETRY_BACKOFF, 5 s,
and doubles per try up to CONNECTOR_RETRY_BACKOFF_MAX, 10 h), for CONNECTOR_RETRY_PATIENCE (a day)
from the event's first failed try: the last try is at that moment, and when it fails too the
event fails, the connection is disabled and whoever it names is told (`connection_disabled_tell`:
an e-mail by the task that retries, once that commits). At least 16 tries in all, 18 on average,
over Svix's day.

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

import json
import logging
import time
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.db import connection as db_connection
from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from partner.connector.events import RELAY_CHORE
from partner.connector.models import Connection, Event, EventAttempt, EventState
from partner.connector.services import endpoint_address_rule, endpoint_problem
from partner.core import outbound
from partner.core.checkpoints import checkpoint
from partner.core.enqueue import rows_relay
from partner.core.housekeeping import Chore, housekeeping_chore_wake
from partner.core.leases import Lease, lease_free, lease_kept, lease_until, leases_expired_free
from partner.core.mail import mail_send_enqueue
from partner.core.retries import EVENT_SENDS
from partner.core.returning import update_returning

logger = logging.getLogger(__name__)

SEND_TASK = "connector.event_send"
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


# The advisory lock (PostgreSQL) a relay holds while it counts the sends in flight and takes more.
_RELAY_LOCK = 0x70A51711


def sends_room(now: datetime) -> int:
    """How many more events may be handed out now: CONNECTOR_SENDS_IN_FLIGHT (at least 1) less the
    sends under way (the events whose lease is held), whichever worker holds them. Called inside the
    relay's transaction: on PostgreSQL it takes a lock until that commits, so relays in several
    workers never hand out more than the bound between them (SQLite has one writer)."""
    if db_connection.vendor == "postgresql":
        with db_connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_RELAY_LOCK])
    in_flight = Event.objects.filter(state=EventState.PENDING, claimed_until__gte=now).count()
    return max(1, settings.CONNECTOR_SENDS_IN_FLIGHT) - in_flight


def _events_take(now: datetime, *, limit: int) -> tuple[list[Event], datetime]:
    """Take the leases of up to `limit` events due, within the bound (`sends_room`): the events
    taken, in order, as the UPDATE left them, and their lease's end. Inside the caller's transaction."""
    until = lease_until(now)
    room = min(limit, sends_room(now))
    if room <= 0:
        return [], until
    wanted = list(events_due(now).values_list("pk", flat=True)[:room])
    if not wanted:
        return [], until
    free = Event.objects.filter(pk__in=wanted, state=EventState.PENDING).filter(lease_free(now))
    taken = {event.pk: event for event in update_returning(free, claimed_until=until)}
    return [taken[pk] for pk in wanted if pk in taken], until


def events_relay(*, limit: int = BATCH) -> int:
    """Take the lease of each event due and hand it to a worker; how many went. The relay's shape
    (`partner.core.enqueue.rows_relay`): the leases are taken, the tasks published as one batch,
    and the leases committed; when the broker takes none, no lease is taken and the events wait."""

    def take() -> list[dict]:
        taken, until = _events_take(timezone.now(), limit=limit)
        return [{"event_id": pk, "lease_until": until.isoformat()} for pk in sorted(event.pk for event in taken)]

    return rows_relay(SEND_TASK, take, what="event(s)")


def _place_hand_on(delivered: Event) -> tuple[Event, datetime] | None:
    """In the transaction that released `delivered`'s lease: take the lease of the next event due, its
    (connection, order)'s next one first, else the oldest due, to send in the same thread; (the event,
    its lease's end), or None when none is due or another worker took it first.

    The place among the sends in flight is the one just freed, given on in the same commit, so the
    sends in flight never grow and no room is counted: the relay's lock (`sends_room`) is not taken.
    A send that waited for that lock here held a worker's thread without holding a place, so more
    sends could start behind it, and each then queued for the lock too: up to 61 of 64 threads at
    once in the waits bench, the events waiting seconds for it (docs/performance.md).

    The event goes as the take left it, its try counted and its connection as the choice read it
    (enabled, with an endpoint: `events_due`): its send needs no statement before its POST, as this
    commit is its fence (`_event_send`)."""
    now = timezone.now()
    due = events_due(now).select_related("connection")
    # Two SELECTs, not one ordering its own order first: that one ordered every event due, where the
    # first walks the order's few and the second stops at the oldest (docs/performance.md).
    chosen = due.filter(connection=delivered.connection_id, order=delivered.order_id).first() or due.first()
    if chosen is None:
        return None
    checkpoint("events.next_chosen")
    # Another send may have chosen the same event: the UPDATE takes it only while its lease is free,
    # so of two the second finds it taken (after the first's commit, on its row's lock) and hands
    # nothing on.
    until = lease_until(now)
    free = Event.objects.filter(pk=chosen.pk, state=EventState.PENDING).filter(lease_free(now))
    taken = update_returning(free, claimed_until=until, attempts=F("attempts") + 1)
    if not taken:
        return None
    checkpoint("events.next_taken")
    event = taken[0]
    event.connection = chosen.connection
    return event, until


# A send hands its place on (`_place_hand_on`) for this long at most, then leaves what waits to the
# relay: a task ends well within its time limit (CELERY_TASK_SOFT_TIME_LIMIT), each send taking at
# most CONNECTOR_SEND_TIMEOUT more.
HAND_ON_SECONDS = 30.0


def events_send(*, event_id: int, lease_until: datetime) -> int:
    """The events' task: send the event the relay handed out, then, while each send delivers, the
    next one due in the same thread (`_place_hand_on`), for HAND_ON_SECONDS at most; then have what
    waits relayed. How many were delivered. A send that failed or was not this worker's hands nothing
    on: its place goes back to the relay (a failing endpoint is not tried again at once)."""
    started, delivered, taken = time.monotonic(), 0, None
    while True:
        hand_on = time.monotonic() - started < HAND_ON_SECONDS
        sent, handed = _event_send(event_id=event_id, lease_until=lease_until, hand_on=hand_on, taken=taken)
        delivered += sent is True
        if handed is None:
            break
        taken, lease_until = handed
        event_id = taken.pk
        checkpoint("events.handed_on")
    # Its place among the sends in flight is free (or its time is up) and its order's next event may
    # be due: have what waits handed out now, not at the relay's next round.
    relay_soon()
    return delivered


def relay_soon() -> None:
    """Have the events due handed out now: by this process's housekeeping loop where one runs (a
    worker's main process; its thread takes the relay's lock, not the task's), else here."""
    if not housekeeping_chore_wake(RELAY_CHORE):
        events_relay()


def events_pending() -> bool:
    """Whether any event waits to be sent (one light statement, on the pending events' index)."""
    return Event.objects.filter(state=EventState.PENDING).exists()


def _relay_round() -> bool:
    # The relay's round with nothing pending, most of a worker's idle seconds, was its transaction
    # (the advisory lock, the count of sends in flight, the search of the events due: about 4 ms of
    # the worker's CPU, every CONNECTOR_RELAY_INTERVAL); one look at the pending events' index
    # answers it instead. An event stored meanwhile wakes the relay, or waits for its next round.
    return events_pending() and events_relay() >= BATCH


def relay_chore(*, interval: float) -> Chore:
    return Chore(name=RELAY_CHORE, run=_relay_round, interval=interval)


def events_left_hand_back() -> int:
    """Free the events whose worker died while sending them (the relay takes them again); how many."""
    return len(leases_expired_free(Event.objects.filter(state=EventState.PENDING)))


# The send ----------------------------------------------------------------------------------------


def _post(connection: Connection, event: Event) -> outbound.Try:
    """POST the event: one try of the outbound module's bounded exchange (`outbound.exchange_kept`):
    the whole exchange ends by CONNECTOR_SEND_TIMEOUT, at most the kept start of the answer is read,
    and the connection is made only to an address the endpoint's rule allows, checked when the host
    is resolved and on the connected peer, so a name that resolves elsewhere by now (DNS rebinding)
    is refused too."""
    with outbound.one_off() as session:
        return outbound.exchange_kept(
            "POST",
            connection.endpoint_url,
            channel="connector",
            session=session,
            deadline=settings.CONNECTOR_SEND_TIMEOUT,
            shown=endpoint_shown(connection.endpoint_url),
            address_refusal=endpoint_address_rule(connection.endpoint_url),
            data=event_body(event),
            headers=signature_headers(event, connection.secrets()),
        )


def endpoint_shown(url: str) -> str:
    """The endpoint as a log line names it: scheme, host, port and path, never a query (it may hold a token)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def event_send(*, event_id: int, lease_until: datetime) -> bool | None:
    """Send one event under the lease the relay took; True delivered, False to be tried again or
    failed, None when it was not this worker's to send (already delivered, lease lost)."""
    return _event_send(event_id=event_id, lease_until=lease_until, hand_on=False)[0]


def _event_send(
    *, event_id: int, lease_until: datetime, hand_on: bool, taken: Event | None = None
) -> tuple[bool | None, tuple[Event, datetime] | None]:
    """`event_send`, and with `hand_on` the next event taken in its place when it delivered
    (`_place_hand_on`: the event and its lease's end), else None. `taken`: the event as the previous
    send's hand-on took it (its try counted, its connection read), else the relay handed it out."""
    lease = Lease(Event, event_id, lease_until)
    if taken is not None:
        # Taken in the transaction that committed just before this (`_place_hand_on`): that commit
        # is the fence, with a whole lease ahead; the try was counted in the same UPDATE.
        event, connection = taken, taken.connection
    else:
        # The relay publishes before it commits (`rows_relay`), so this task may start while the
        # relay's lease is not committed yet. An UPDATE matching that lease alone would see the row
        # untaken and match nothing, and the event would wait for its unsent lease to run out
        # (LEASE_SECONDS and a hand-back: 15-20 s, a place among the sends in flight held all
        # along). `confirm_taken` waits for the relay's commit (PostgreSQL; SQLite has one writer),
        # then confirms the lease: the fence, and the try counted before it is made, in one UPDATE.
        event = lease.confirm_taken(attempts=F("attempts") + 1)
        if event is None:
            return None, None
        connection = Connection.objects.filter(pk=event.connection_id).first()
    if event.state != EventState.PENDING or connection is None or not connection.enabled or not connection.endpoint_url:
        lease.release(attempts=F("attempts") - 1)  # not tried: the try counted is taken back
        return None, None
    event.connection = connection
    with lease_kept(lease):
        started_at = timezone.now()
        if refused := endpoint_problem(connection.endpoint_url):  # the rule as it is now, not when it was saved
            status, text, duration = None, f"not sent: {refused}", 0
        else:
            tried = _post(connection, event)
            status, text, duration = tried.status, tried.answer, tried.duration_ms
    delivered = status is not None and 200 <= status < 300
    handed = _outcome_record(
        event, lease, started_at=started_at, status=status, text=text, duration=duration, ok=delivered, hand_on=hand_on
    )
    return delivered, handed


def _outcome_record(
    event: Event, lease: Lease, *, started_at, status, text, duration, ok: bool, hand_on: bool = False
) -> tuple[Event, datetime] | None:
    """The try recorded, the event delivered or to be tried again (or failed); with `hand_on`, a
    delivered event's place given on in the same transaction (`_place_hand_on`, what it returns)."""
    now = timezone.now()
    connection = Connection.objects.filter(pk=event.connection_id)
    with transaction.atomic():
        EventAttempt.objects.create(
            event=event, started_at=started_at, duration_ms=duration, status_code=status, answer=text, succeeded=ok
        )
        if ok:
            lease.release(
                state=EventState.DELIVERED, delivered_at=now, last_error="", next_attempt_at=None, failing_since=None
            )
            handed = _place_hand_on(event) if hand_on else None
        else:
            failure = _failure_record(event, lease, connection, status=status, text=text, now=now)
    if not ok:
        _failure_log(event, *failure)
        return None
    # The connection's health in a statement of its own, after the commit: written in the transaction,
    # its row stayed locked through the hand-on's statements and the commit, and the other sends in
    # flight, whose UPDATE matched the same stale row, queued for that lock (docs/performance.md).
    healthy = {"last_success_at": now, "failing_since": None, "consecutive_failures": 0}
    connection.filter(_health_to_write(now)).update(**healthy)
    return handed


def _failure_record(event: Event, lease: Lease, connection, *, status, text: str, now) -> tuple[str, int, str]:
    """A try that failed, in `_outcome_record`'s transaction: the event to be tried again, or failed
    and its connection disabled (the reason told once this commits); what to log then."""
    attempts = event.attempts  # as the fence or the hand-on's take counted this try
    error = f"status {status}" if status is not None else text
    failing_since = event.failing_since or now
    again = EVENT_SENDS.next_try(tries=attempts, failing_since=failing_since, now=now, answered=status is not None)
    connection.filter(failing_since__isnull=True).update(failing_since=now)
    connection.update(last_failure_at=now, consecutive_failures=F("consecutive_failures") + 1)
    if again is not None:
        lease.release(last_error=outbound.kept(error), next_attempt_at=again, failing_since=failing_since)
        return error, attempts, f"again at {again:%Y-%m-%d %H:%M:%S} UTC"
    lease.release(
        state=EventState.FAILED, last_error=outbound.kept(error), next_attempt_at=None, failing_since=failing_since
    )
    reason = f"{event.type} {event.message_id} failed after {attempts} tries ({error[:200]})"
    if connection.filter(enabled=True).update(enabled=False, disabled_reason=reason):
        connection_disabled_tell(Connection.objects.get(pk=event.connection_id), reason)
    return error, attempts, "given up, connection disabled"


# A delivered send writes its connection's health when it changes, or when the last success it
# shows is this old: every send of a connection wrote the one row, and the sends in flight queued
# for its lock, each until the other's transaction committed.
LAST_SUCCESS_RESOLUTION = timedelta(seconds=1)


def _health_to_write(now: datetime) -> Q:
    """The connection rows a delivered send at `now` has something to write to."""
    stale = Q(last_success_at__isnull=True) | Q(last_success_at__lt=now - LAST_SUCCESS_RESOLUTION)
    return stale | Q(failing_since__isnull=False) | ~Q(consecutive_failures=0)


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
