"""Events out, rule by rule: the relay takes the head of each order's events, a worker sends it
signed (verified here with the `standardwebhooks` library) and records each attempt; a failure is
tried again after the project's backoff, and a day after the first one the event fails, its
connection is disabled and staff are told; replays send events again."""

import threading
from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection as db_connection
from django.db import transaction
from django.utils import timezone

from partner.connector import sending
from partner.connector.models import Connection, Event, EventAttempt, EventState
from partner.connector.services import event_replay, events_replay_since
from partner.core import outbound
from partner.core.mail import MAIL_TASK
from partner.core.retries import EVENT_SENDS
from partner.core.tasks import mail_send
from partner.fulfillment.orders.services import order_fail
from tests.helpers.connector import OrderSystem
from tests.helpers.queues import queue_taken

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def system(connection):
    running = OrderSystem(connection.created.signing_secret)
    Connection.objects.filter(pk=connection.pk).update(endpoint_url=running.url)
    yield running
    running.close()


def relayed(tasks_sent) -> list[dict]:
    """One relay round; the send tasks it published (their kwargs)."""
    tasks_sent.clear()
    sending.events_relay()
    return [kwargs for name, kwargs in tasks_sent if name == sending.SEND_TASK]


def send(kwargs):
    from django.utils.dateparse import parse_datetime

    return sending.event_send(event_id=kwargs["event_id"], lease_until=parse_datetime(kwargs["lease_until"]))


def test_an_event_goes_signed_once_and_its_attempt_is_recorded(order, system, tasks_sent):
    [task] = relayed(tasks_sent)
    assert relayed(tasks_sent) == []  # held by its worker: not handed out twice
    assert send(task) is True
    [event] = Event.objects.filter(order=order)
    assert event.state == EventState.DELIVERED and event.attempts == 1 and event.claimed_until is None
    assert system.types() == ["order.created"] and system.refused == 0
    assert system.events[0]["id"] == event.message_id
    [attempt] = EventAttempt.objects.filter(event=event)
    assert attempt.succeeded and attempt.status_code == 200 and attempt.duration_ms >= 0
    assert Connection.objects.get(pk=event.connection_id).last_success_at is not None
    assert relayed(tasks_sent) == []


def test_the_broker_away_takes_no_lease_and_the_event_waits(order, system, broker_down):
    assert sending.events_relay() == 0
    event = Event.objects.get(order=order)
    assert event.claimed_until is None and event.state == EventState.PENDING  # due at the next round
    assert list(sending.events_due(timezone.now())) == [event]


def test_every_secret_of_a_rotation_signs(order, system, connection, tasks_sent):
    from standardwebhooks.webhooks import Webhook

    event = Event.objects.get(order=order)
    headers = sending.signature_headers(event, ["whsec_" + "QUJD" * 8, connection.created.signing_secret])
    assert len(headers["webhook-signature"].split(" ")) == 2
    Webhook(connection.created.signing_secret).verify(sending.event_body(event), headers)
    Webhook("whsec_" + "QUJD" * 8).verify(sending.event_body(event), headers)


def test_an_orders_events_go_one_at_a_time_in_order(order, system, tasks_sent):
    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    [first] = relayed(tasks_sent)  # the later event waits for the first
    assert Event.objects.get(pk=first["event_id"]).type == "order.created"
    send(first)
    [second] = relayed(tasks_sent)
    send(second)
    assert system.types() == ["order.created", "order.failed"]


def test_a_failing_endpoint_is_tried_again_later_then_given_up_after_a_day(order, system, settings, tasks_sent):
    settings.CONNECTOR_RETRY_BACKOFF, settings.CONNECTOR_RETRY_BACKOFF_MAX = 60, 120
    settings.CONNECTOR_RETRY_PATIENCE = 24 * 3600
    system.script = [500, 503, 500]
    [task] = relayed(tasks_sent)
    assert send(task) is False
    event = Event.objects.get(order=order)
    assert event.state == EventState.PENDING and event.last_error == "status 500"
    first_failure = event.failing_since
    assert first_failure and timedelta(0) <= event.next_attempt_at - first_failure <= timedelta(seconds=60)
    Event.objects.filter(pk=event.pk).update(next_attempt_at=timezone.now() + timedelta(seconds=30))
    assert relayed(tasks_sent) == []  # not due yet
    connection = Connection.objects.get(pk=event.connection_id)
    assert connection.failing_since and connection.consecutive_failures == 1 and connection.enabled

    Event.objects.filter(pk=event.pk).update(next_attempt_at=timezone.now())
    [task] = relayed(tasks_sent)
    assert send(task) is False
    event.refresh_from_db()
    assert event.state == EventState.PENDING and event.failing_since == first_failure  # the day runs from the first
    assert timedelta(0) <= event.next_attempt_at - timezone.now() <= timedelta(seconds=120)  # the ceiling doubled

    # The day is over: the next failure is the last.
    Event.objects.filter(pk=event.pk).update(
        failing_since=timezone.now() - timedelta(hours=24), next_attempt_at=timezone.now()
    )
    [task] = relayed(tasks_sent)
    send(task)
    event.refresh_from_db()
    assert event.state == EventState.FAILED and event.attempts == 3
    assert [a.status_code for a in EventAttempt.objects.filter(event=event)] == [500, 503, 500]
    connection.refresh_from_db()
    assert not connection.enabled and "failed after 3 tries" in connection.disabled_reason
    # Staff are told by the task that retries (tests/core/test_mail.py), published once this committed.
    [notice] = [kwargs for name, kwargs in tasks_sent if name == MAIL_TASK]
    assert notice["to"] == ["ops@x.example"] and "acme-amc" in notice["subject"]
    assert event.message_id in notice["body"]
    for borrowers in ("LN-2026-0042", "500 Howard", "Ann Example", "94105", order.transaction_id):
        assert borrowers not in notice["subject"] + notice["body"]  # no order or borrower data
    mail_send.apply(kwargs=notice).get()
    [sent] = mail.outbox
    assert sent.to == ["ops@x.example"] and sent.subject == notice["subject"]

    assert event_replay(event_id=event.pk)  # a replayed event has a day of its own again
    assert Event.objects.get(pk=event.pk).failing_since is None


def test_the_disabled_notice_goes_only_once_the_connection_is_disabled(connection, tasks_sent):
    def notices():
        return [kwargs["to"] for name, kwargs in tasks_sent if name == MAIL_TASK]

    with transaction.atomic():
        sending.connection_disabled_tell(connection, "order.created msg_1 failed after 18 tries (status 500)")
        assert notices() == []
    assert notices() == [["ops@x.example"]]
    tasks_sent.clear()
    with pytest.raises(RuntimeError), transaction.atomic():
        sending.connection_disabled_tell(connection, "order.created msg_1 failed after 18 tries (status 500)")
        raise RuntimeError("the disabling rolled back")
    assert notices() == []


def test_retry_waits_grow_are_spread_and_end_with_the_day(settings):
    settings.CONNECTOR_RETRY_BACKOFF, settings.CONNECTOR_RETRY_BACKOFF_MAX = 5, 36000
    settings.CONNECTOR_RETRY_PATIENCE = 24 * 3600
    since = timezone.now()

    def waits(attempts, *, at=since) -> list[float]:
        return [
            (EVENT_SENDS.next_try(tries=attempts, failing_since=since, now=at) - at).total_seconds() for _ in range(200)
        ]

    first, tenth, twentieth = waits(1), waits(10), waits(20)
    assert all(0 <= w <= 5 for w in first) and max(first) - min(first) > 2  # spread, not one wave
    assert all(0 <= w <= 2560 for w in tenth) and max(tenth) > 5  # the ceiling doubles per try
    assert all(0 <= w <= 36000 for w in twentieth) and max(twentieth) > 2560  # up to its largest
    # Near the end of the day, the next try is at its end at the latest, and one failed then is the last.
    late = since + timedelta(hours=23)
    end = since + timedelta(hours=24)
    assert max(EVENT_SENDS.next_try(tries=20, failing_since=since, now=late) for _ in range(50)) == end
    assert EVENT_SENDS.next_try(tries=20, failing_since=since, now=end) is None
    assert EVENT_SENDS.next_try(tries=2, failing_since=since, now=end + timedelta(seconds=1)) is None


def test_a_try_with_no_answer_waits_at_least_one_more_timeout(settings):
    settings.CONNECTOR_RETRY_BACKOFF, settings.CONNECTOR_RETRY_BACKOFF_MAX, settings.CONNECTOR_SEND_TIMEOUT = 5, 60, 4
    now = timezone.now()
    waits = [
        (EVENT_SENDS.next_try(tries=1, failing_since=now, now=now, answered=False) - now).total_seconds()
        for _ in range(200)
    ]
    assert all(4 <= w <= 5 for w in waits) and max(waits) > 4  # the endpoint may still be at the last one


def test_a_timeout_is_a_failed_attempt(order, system, settings, tasks_sent):
    settings.CONNECTOR_SEND_TIMEOUT = 0.5
    system.script = [("slow", 1.5)]
    [task] = relayed(tasks_sent)
    assert send(task) is False
    [attempt] = EventAttempt.objects.all()
    assert attempt.status_code is None and "Timeout" in attempt.answer and not attempt.succeeded


def test_staff_replay_one_event_or_everything_since(order, system, tasks_sent):
    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    for _ in range(2):
        [task] = relayed(tasks_sent)
        send(task)
    created = Event.objects.get(order=order, type="order.created")
    assert event_replay(event_id=created.pk)
    assert not event_replay(event_id=created.pk)  # waiting already
    [task] = relayed(tasks_sent)
    send(task)
    assert system.posts == 3 and system.types() == ["order.created", "order.failed"]  # same webhook-id: deduped

    since = timezone.now() - timedelta(minutes=5)
    assert events_replay_since(connection_id=created.connection_id, since=since) == 2
    assert Event.objects.filter(state=EventState.PENDING).count() == 2


def test_a_worker_that_died_leaves_its_event_to_be_handed_back(order, system, tasks_sent):
    [task] = relayed(tasks_sent)
    Event.objects.filter(pk=task["event_id"]).update(claimed_until=timezone.now() - timedelta(seconds=1))
    assert sending.events_left_hand_back() == 1
    [again] = relayed(tasks_sent)
    assert again["event_id"] == task["event_id"]
    assert send(task) is None  # the dead worker's lease is no longer valid: it sends nothing
    assert send(again) is True and system.posts == 1


def test_a_failed_send_is_a_warning_naming_the_connection_endpoint_and_why(order, connection, tasks_sent, caplog):
    # The connection's endpoint, http://127.0.0.1:9/hooks: nothing listens there.
    [task] = relayed(tasks_sent)
    with caplog.at_level("WARNING", logger="partner.connector.sending"):
        assert send(task) is False
    [attempt] = EventAttempt.objects.all()
    assert attempt.status_code is None and attempt.answer.startswith("connection refused")
    [line] = [r.getMessage() for r in caplog.records if r.name == "partner.connector.sending"]
    assert "acme-amc" in line and "http://127.0.0.1:9/hooks" in line and "connection refused" in line
    assert "order.created" in line and "try 1" in line


def test_why_unanswered_in_an_operator_s_words():
    import socket

    import requests

    refused = requests.ConnectionError(ConnectionRefusedError(111, "Connection refused"))
    assert outbound.cause_of(refused, limit=5).startswith("connection refused")
    unknown = requests.ConnectionError(socket.gaierror(-2, "Name or service not known"))
    assert outbound.cause_of(unknown, limit=5) == "host name not found (DNS)"
    assert sending.endpoint_shown("https://u:p@x.example:8443/hooks?token=s3cret") == "https://x.example:8443/hooks"


def test_an_endpoint_the_rules_now_refuse_is_never_sent_to(order, system, settings, tasks_sent):
    # Saved beside the sandbox (http on the loopback); the same database in production refuses it.
    settings.SANDBOX_ENABLED = False
    [task] = relayed(tasks_sent)
    assert send(task) is False
    assert system.posts == 0
    [attempt] = EventAttempt.objects.all()
    assert attempt.status_code is None and attempt.answer.startswith("not sent: The endpoint must be an https")


def test_no_more_sends_are_handed_out_than_may_be_in_flight(
    order, fake_platform, connected_product, system, settings, tasks_sent
):
    """A partner's slow endpoint holds at most CONNECTOR_SENDS_IN_FLIGHT worker threads: the relay
    hands out no more events while that many are being sent, and more once one is done."""
    from tests.helpers.connector import connected_order

    settings.CONNECTOR_SENDS_IN_FLIGHT = 2
    for number in (2, 3):
        connected_order(fake_platform, transaction_id=f"txn-in-flight-{number}", product_name=connected_product.name)
    first = relayed(tasks_sent)
    assert len(first) == 2  # three orders' events due, two handed out
    assert relayed(tasks_sent) == []  # both still in flight
    assert send(first[0]) is True
    [third] = relayed(tasks_sent)  # one is done: room for one more
    assert third["event_id"] not in {task["event_id"] for task in first}


def test_a_send_that_ends_hands_its_place_to_the_oldest_event_due(
    order, fake_platform, connected_product, system, settings, tasks_sent
):
    """The task that delivered an event, with no event of its order waiting, sends the oldest one due
    in its place: another order's event waiting for room goes at once, without a relay round
    (CONNECTOR_RELAY_INTERVAL) or a task between."""
    from partner.connector.tasks import event_send
    from tests.helpers.connector import connected_order

    settings.CONNECTOR_SENDS_IN_FLIGHT = 2
    for number in (2, 3):
        connected_order(fake_platform, transaction_id=f"txn-hand-on-{number}", product_name=connected_product.name)
    first, second = relayed(tasks_sent)  # the third order's event waits for room
    tasks_sent.clear()
    assert event_send(**first) == 2  # its own, then the third order's, in this thread
    assert tasks_sent == []
    assert Event.objects.filter(state=EventState.DELIVERED).count() == 2
    assert Event.objects.get(pk=second["event_id"]).state == EventState.PENDING  # still its worker's


def test_a_delivered_send_hands_its_place_to_its_orders_next_event(order, system, tasks_sent):
    """A send that delivered keeps its place among the sends in flight for its order's next event and
    sends it in the same thread: no task, no relay round, no worker's queue between the two (they
    waited seconds there in the waits bench, docs/performance.md "Where the answers waited")."""
    from partner.connector.tasks import event_send

    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    [first] = relayed(tasks_sent)
    tasks_sent.clear()
    assert event_send(**first) == 2
    assert tasks_sent == []
    assert system.types() == ["order.created", "order.failed"]
    assert set(Event.objects.filter(order=order).values_list("state", flat=True)) == {EventState.DELIVERED}


def test_a_failed_send_hands_nothing_on(order, connection, tasks_sent):
    """A send that failed keeps no place: its endpoint is not tried again at once, in this thread or
    another, and the order's next event waits behind its retry (the endpoint, port 9: refused)."""
    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    [first] = relayed(tasks_sent)
    tasks_sent.clear()
    assert sending.events_send(event_id=first["event_id"], lease_until=_until(first)) == 0
    assert tasks_sent == [] and EventAttempt.objects.count() == 1
    assert Event.objects.filter(claimed_until__isnull=False).count() == 0


def test_a_place_handed_on_counts_in_flight_and_keeps_its_order_busy(
    order, fake_platform, connected_product, system, settings, tasks_sent
):
    """Between the hand-on's commit and its send, the event handed on is held (its lease committed):
    a relay in another worker neither hands it out again nor its order's next event, nor more sends
    than the bound allows."""
    from tests.helpers.connector import connected_order
    from tests.helpers.interleaving import Actor, Pause

    settings.CONNECTOR_SENDS_IN_FLIGHT = 1
    order_fail(order=order, code="retries_exhausted", reason="Gave up")  # a second event of the order
    connected_order(fake_platform, transaction_id="txn-handed-on-2", product_name=connected_product.name)
    [first] = relayed(tasks_sent)
    tasks_sent.clear()
    with Pause("events.handed_on") as handed_on:
        sender = Actor(lambda: sending.events_send(event_id=first["event_id"], lease_until=_until(first)))
        handed_on.reached()  # the first event delivered, the order's next one taken, not sent yet
        held = Event.objects.get(order=order, type="order.failed")
        assert held.claimed_until is not None and held.state == EventState.PENDING
        assert sending.events_relay() == 0  # no room: the place is the hand-on's
        settings.CONNECTOR_SENDS_IN_FLIGHT = 2
        [other] = relayed(tasks_sent)  # room for one more: the other order's, not this order's
        assert Event.objects.get(pk=other["event_id"]).order_id != order.pk
        handed_on.resume()
    assert sender.outcome() == 2
    assert system.types() == ["order.created", "order.failed"]


ON_POSTGRESQL = pytest.mark.skipif(
    db_connection.vendor != "postgresql", reason="two writers at once: SQLite has one, the second waits for the first"
)


@ON_POSTGRESQL
def test_a_send_hands_its_place_on_while_a_relay_holds_the_relay_s_lock(order, system, tasks_sent):
    """The hand-on gives on the place its own send freed, in the transaction that frees it, so it
    never waits for the relay's lock (`sends_room`): sends that queued for that lock held a worker's
    thread without a place, more sends started behind them, and up to 61 of 64 threads waited there
    in the waits bench (docs/performance.md). Here a relay holds the lock, paused, while the send of
    the order's first event delivers and takes the order's next one."""
    from tests.helpers.interleaving import Actor, Pause

    order_fail(order=order, code="retries_exhausted", reason="Gave up")  # the order's second event
    [first] = relayed(tasks_sent)
    with Pause("relay.published") as published, Pause("events.handed_on") as handed_on:
        relay = Actor(sending.events_relay, name="relay")
        published.reached()  # the relay holds its lock: nothing due (the order's event is held)
        sender = Actor(lambda: sending.events_send(event_id=first["event_id"], lease_until=_until(first)))
        handed_on.reached()  # taken while the relay still holds its lock
        assert relay.is_alive()
        held = Event.objects.get(order=order, type="order.failed")
        assert held.claimed_until is not None and held.state == EventState.PENDING
        published.resume()
        handed_on.resume()
        assert relay.outcome() == 0
    assert sender.outcome() == 2
    assert system.types() == ["order.created", "order.failed"]


def _two_sends_and_one_waiting(
    fake_platform, connected_product, settings, tasks_sent, monkeypatch
) -> tuple[dict, dict, Event]:
    """Three connected orders' first events, the bound at two: the first two handed out, the third's
    event waiting for a place (the one both sends will want when they deliver). The connection's
    health is fresh, so neither send writes its row: they meet on the event's row only."""
    from tests.helpers.connector import connected_order

    settings.CONNECTOR_SENDS_IN_FLIGHT = 2
    monkeypatch.setattr(sending, "LAST_SUCCESS_RESOLUTION", timedelta(hours=1))
    Connection.objects.update(last_success_at=timezone.now())
    for number in (2, 3):
        connected_order(fake_platform, transaction_id=f"txn-race-{number}", product_name=connected_product.name)
    first, second = relayed(tasks_sent)
    waiting = Event.objects.exclude(pk__in=(first["event_id"], second["event_id"])).get()
    return first, second, waiting


def _thread_named(name: str):
    return lambda: threading.current_thread().name == name


@ON_POSTGRESQL
def test_of_two_sends_that_chose_the_same_next_event_the_later_hands_nothing_on(
    order, fake_platform, connected_product, system, settings, tasks_sent, monkeypatch
):
    """Two sends deliver at once and both choose the one event waiting: the first to take its lease
    sends it; the other, held between its choice and its take, finds it held and hands nothing on,
    even while the first has not sent it yet. The event goes once, by the send that holds it (its
    UPDATE takes a lease only while it is free: without that, the later one takes it over)."""
    from tests.helpers.interleaving import Actor, Pause

    first, second, waiting = _two_sends_and_one_waiting(
        fake_platform, connected_product, settings, tasks_sent, monkeypatch
    )
    with (
        Pause("events.next_chosen", when=_thread_named("late")) as chosen,
        Pause("events.handed_on", when=_thread_named("early")) as handed_on,
    ):
        late = Actor(lambda: sending.events_send(event_id=first["event_id"], lease_until=_until(first)), name="late")
        chosen.reached()  # its event delivered, the waiting one chosen, its lease not taken
        early = Actor(
            lambda: sending.events_send(event_id=second["event_id"], lease_until=_until(second)), name="early"
        )
        handed_on.reached()  # the waiting event's lease taken and committed, the event not sent yet
        chosen.resume()
        assert late.outcome() == 1  # its own only: the waiting event is held
        handed_on.resume()
    assert early.outcome() == 2  # its own, then the waiting one
    assert EventAttempt.objects.filter(event=waiting).count() == 1
    assert system.posts_of[waiting.message_id] == 1
    assert set(Event.objects.values_list("state", flat=True)) == {EventState.DELIVERED}


@ON_POSTGRESQL
def test_a_send_that_wants_the_event_another_is_taking_waits_for_its_commit_and_hands_nothing_on(
    order, fake_platform, connected_product, system, settings, tasks_sent, monkeypatch
):
    """The other order of the same race: one send took the waiting event's lease and has not
    committed; the second, having chosen it too, waits on the row's lock, then reads it taken (not
    the row as it was before: PostgreSQL re-reads it under the lock) and hands nothing on."""
    from tests.helpers.interleaving import Actor, Pause, until_waiting_on_a_lock

    first, second, waiting = _two_sends_and_one_waiting(
        fake_platform, connected_product, settings, tasks_sent, monkeypatch
    )
    with Pause("events.next_taken", when=_thread_named("early")) as taken:
        early = Actor(lambda: sending.events_send(event_id=first["event_id"], lease_until=_until(first)), name="early")
        taken.reached()  # the waiting event's lease taken, not committed
        late = Actor(lambda: sending.events_send(event_id=second["event_id"], lease_until=_until(second)), name="late")
        until_waiting_on_a_lock()  # the late one chose it too and waits on its row
        taken.resume()
    assert early.outcome() == 2
    assert late.outcome() == 1
    assert EventAttempt.objects.filter(event=waiting).count() == 1
    assert system.posts_of[waiting.message_id] == 1
    assert set(Event.objects.values_list("state", flat=True)) == {EventState.DELIVERED}


@ON_POSTGRESQL
def test_a_send_handing_its_place_on_holds_no_lock_on_its_connection(
    order, fake_platform, connected_product, system, settings, tasks_sent, monkeypatch
):
    """A delivered send writes its connection's health after its outcome's commit, in a statement of
    its own: while it hands its place on (that transaction open), another send's write of the same
    row goes through at once. Written in the transaction, the row stayed locked until the commit, and
    every send in flight that found the health stale queued for it."""
    from tests.helpers.interleaving import Actor, Pause

    first, _, _ = _two_sends_and_one_waiting(fake_platform, connected_product, settings, tasks_sent, monkeypatch)
    Connection.objects.update(last_success_at=None)  # stale: the send writes its health
    with Pause("events.next_chosen", when=_thread_named("sender")) as chosen:
        sender = Actor(
            lambda: sending.events_send(event_id=first["event_id"], lease_until=_until(first)), name="sender"
        )
        chosen.reached()  # delivered, the next event chosen, the outcome's transaction open
        with transaction.atomic():
            with db_connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            assert Connection.objects.update(consecutive_failures=0) == 1  # another send's write
        chosen.resume()
    assert sender.outcome() >= 1
    assert Connection.objects.get().last_success_at is not None  # written, after the commit


def test_a_send_s_relay_runs_in_its_process_s_housekeeping_loop_where_one_runs(order, system, tasks_sent):
    """A send that ends wakes its process's relay instead of taking the relay's lock in the task's
    thread, where a loop of this process runs the relay; where none does (a web worker, a prefork
    worker's child) it relays itself."""
    from partner.core.housekeeping import housekeeping_chore_wake
    from tests.helpers.housekeeping import housekeeping_running
    from tests.helpers.waiting import wait_for

    assert housekeeping_chore_wake(sending.RELAY_CHORE) is False  # no loop here yet
    with housekeeping_running([sending.relay_chore(interval=60)]):
        wait_for(lambda: housekeeping_chore_wake(sending.RELAY_CHORE), timeout=10)
    assert housekeeping_chore_wake(sending.RELAY_CHORE) is False


def test_a_connection_s_health_is_written_when_it_changes_or_a_second_on(order, connection, settings):
    """Every delivered send wrote its connection's row, and the sends in flight queued for its lock;
    now a send writes it only when the health changes or the last success shown is a second old."""
    from datetime import timedelta

    now = timezone.now()
    rows = Connection.objects.filter(pk=connection.pk)
    rows.update(last_success_at=now, failing_since=None, consecutive_failures=0)
    assert not rows.filter(sending._health_to_write(now + timedelta(milliseconds=500))).exists()
    assert rows.filter(sending._health_to_write(now + timedelta(seconds=2))).exists()
    rows.update(consecutive_failures=3, failing_since=now)
    assert rows.filter(sending._health_to_write(now)).exists()


def test_an_event_stored_by_a_worker_is_relayed_once_it_commits(order, system, tasks_sent):
    """A move made in a worker's task (a callback's confirmation) wakes that worker's relay when it
    commits: its event is handed out at once, not at the relay's next round (here a minute away)."""
    from tests.helpers.housekeeping import housekeeping_running
    from tests.helpers.waiting import wait_for

    def sends():
        return [kwargs["event_id"] for name, kwargs in list(tasks_sent) if name == sending.SEND_TASK]

    tasks_sent.clear()
    with housekeeping_running([sending.relay_chore(interval=60)]):
        wait_for(lambda: len(sends()) == 1, timeout=10)  # its first round: the order's order.created
        [created] = sends()
        send({"event_id": created, "lease_until": Event.objects.get(pk=created).claimed_until.isoformat()})
        with transaction.atomic():
            order_fail(order=order, code="retries_exhausted", reason="Gave up")
            failed = Event.objects.get(order=order, type="order.failed").pk
            assert failed not in sends()  # not before the commit
        wait_for(lambda: failed in sends(), timeout=5)


def _until(kwargs):
    from django.utils.dateparse import parse_datetime

    return parse_datetime(kwargs["lease_until"])


def test_a_send_that_starts_before_the_relay_commits_waits_for_its_lease(order, system, tasks_sent):
    """The relay publishes before it commits: a worker that takes the task at once waits for the
    relay's lease and sends, instead of finding the event untaken and leaving it, and its place
    among the sends in flight, until the lease runs out (15-20 s a time, measured in the waits bench)."""
    from tests.helpers.interleaving import Actor, Pause, lock_waiters
    from tests.helpers.waiting import wait_for

    tasks_sent.clear()
    with Pause("relay.published") as published:
        relay = Actor(sending.events_relay, name="relay")
        published.reached()  # the task is published; the relay's lease is not committed
        [task] = [kwargs for name, kwargs in tasks_sent if name == sending.SEND_TASK]
        sender = Actor(lambda: send(task), name="sender")
        wait_for(lambda: lock_waiters() >= 1 or not sender.is_alive(), timeout=60, interval=0.02)
        published.resume()
        assert relay.outcome() == 1
    assert sender.outcome() is True
    assert system.types() == ["order.created"]
    assert Event.objects.get(pk=task["event_id"]).state == EventState.DELIVERED


def test_event_sends_have_a_queue_of_their_own_that_every_worker_consumes(order, system):
    """The relay's sends go to the events' queue, not behind the orders' tasks in the default one,
    and a worker started without `-Q` (every deployment's command) consumes both."""
    from config.celery import app

    default, events = app.conf.task_default_queue, f"{app.conf.task_default_queue}.events"
    assert {default, events} <= set(app.amqp.queues)  # what `celery -A config worker` consumes

    queue_taken(events), queue_taken(default)  # a previous test's leftovers
    assert sending.events_relay() == 1
    assert [kwargs["event_id"] for kwargs in queue_taken(events)] == [Event.objects.get(order=order).pk]
    assert queue_taken(default) == []


def test_the_relay_s_round_with_no_event_pending_is_one_statement(order, system, tasks_sent):
    """A worker's idle rounds (every CONNECTOR_RELAY_INTERVAL) look at the pending events' index only:
    no transaction, advisory lock, count of sends in flight nor search of the events due."""
    from django.db import connection as db
    from django.test.utils import CaptureQueriesContext

    round_ = sending.relay_chore(interval=60).run
    tasks_sent.clear()
    round_()  # the order's order.created, pending: relayed
    [task] = [kwargs for name, kwargs in tasks_sent if name == sending.SEND_TASK]
    assert send(task) is True
    with CaptureQueriesContext(db) as queries:
        assert round_() is False
    assert len(queries.captured_queries) == 1, [query["sql"] for query in queries.captured_queries]


def test_a_delivered_send_hands_on_its_orders_next_event_before_an_older_one_due(
    order, fake_platform, connected_product, system, settings, tasks_sent
):
    """The hand-on's one choice puts the delivered event's own order first: its next event goes
    before another order's event that came earlier, then that one."""
    from partner.connector.tasks import event_send
    from tests.helpers.connector import connected_order

    settings.CONNECTOR_SENDS_IN_FLIGHT = 1
    other = connected_order(fake_platform, transaction_id="txn-own-first-2", product_name=connected_product.name)
    order_fail(order=order, code="retries_exhausted", reason="Gave up")  # after the other order's event
    [first] = relayed(tasks_sent)
    assert event_send(**first) == 3
    sent = [event["id"] for event in system.events]
    by_id = dict(Event.objects.values_list("message_id", "order_id"))
    assert [by_id[message_id] for message_id in sent] == [order.pk, order.pk, other.pk]


def test_a_send_is_two_statements_before_its_post_and_one_transaction_after(order, system, tasks_sent, monkeypatch):
    """The statements of a send, each a round trip its thread waits for a core to take up again (the
    waits bench: 11-12 a send, docs/performance.md "The events' send in fewer statements"). An event
    the relay handed out: one fenced UPDATE that counts its try and its connection read; an event
    handed on: none, its take in the transaction before was its fence; then the try recorded, the
    event released and the next one's choice and take in one transaction, then its connection's health
    in a statement of its own (its row locked for that statement only)."""
    from django.db import connection as db
    from django.test.utils import CaptureQueriesContext

    order_fail(order=order, code="retries_exhausted", reason="Gave up")  # the order's second event
    [first] = relayed(tasks_sent)
    posted = []

    def post(connection, event, *, real=sending._post):
        posted.append(len(queries.captured_queries))
        return real(connection, event)

    monkeypatch.setattr(sending, "_post", post)
    monkeypatch.setattr(sending, "relay_soon", lambda: None)
    with CaptureQueriesContext(db) as queries:
        assert sending.events_send(event_id=first["event_id"], lease_until=_until(first)) == 2
    statements = [query["sql"].split(" ")[0] for query in queries.captured_queries]
    assert posted == [2, 2 + 7], statements
    assert statements[:2] == ["UPDATE", "SELECT"]  # the fence (the try counted) and the connection
    # The record and the hand-on (the order's next event chosen and taken), then the health; the
    # second send's own record, with nothing to hand on (none of its order, none of another).
    assert statements[2:9] == ["BEGIN", "INSERT", "UPDATE", "SELECT", "UPDATE", "COMMIT", "UPDATE"]
    assert statements[9:] == ["BEGIN", "INSERT", "UPDATE", "SELECT", "SELECT", "COMMIT", "UPDATE"]
    assert list(Event.objects.values_list("attempts", flat=True)) == [1, 1]


def test_a_send_whose_connection_was_disabled_meanwhile_is_not_tried_nor_counted(order, system, tasks_sent):
    """The fence counts the try before the connection is read: a connection disabled between the
    relay's round and the send gives the event back untried, its try not counted."""
    [task] = relayed(tasks_sent)
    Connection.objects.update(enabled=False)
    assert send(task) is None
    event = Event.objects.get(pk=task["event_id"])
    assert (event.attempts, event.claimed_until, event.state) == (0, None, EventState.PENDING)
    assert system.posts == 0 and not EventAttempt.objects.exists()
