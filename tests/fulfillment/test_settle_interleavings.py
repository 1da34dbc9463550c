"""One settle rule, whatever the order of the sender's record and the service's callbacks.

Deterministic interleavings (`tests/helpers/interleaving.py`): the sender is held after the service
accepted a PATCH and before it recorded it (`sender.patched`), and the "processed" callbacks come
then (before the record) or after it, for each kind of delivery, with and without a response
version. Then two callbacks of one order at once, one held inside its transaction while the other
waits for it. Each ends with N accepted PATCHes, N confirmations (each of the delivery the callback
belongs to) and N `delivery_confirmed` announcements, and the order where its deliveries put it.
"""

from datetime import timedelta

import pytest
import redis.exceptions
from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from partner.core.retries import AnswerAwaited
from partner.fulfillment.enqueue import ORDER_RUN_TASK
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_run
from partner.fulfillment.sending.callbacks import delivery_confirm
from partner.fulfillment.staff import services as staff
from partner.platform.errors import ServiceUnavailableError
from tests.helpers.interleaving import Actor, Pause, until_waiting_on_a_lock
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db(transaction=True)

TXN = "txn-settle-1"
LOAN = {
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"}
}
ENTITLEMENTS = {
    "data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "response": {"fields": ["property", "appraisal"]}}]}
}
# Where the order stands once every delivery of it is confirmed, by the kind of its last one.
SETTLED = {
    DeliveryKind.RESULT: OrderStatus.REQUEST_COMPLETED,
    DeliveryKind.ACKNOWLEDGEMENT: OrderStatus.WITH_STAFF,
    DeliveryKind.STATUS_UPDATE: OrderStatus.WITH_STAFF,
    DeliveryKind.PARTIAL: OrderStatus.WITH_STAFF,
    DeliveryKind.FINAL: OrderStatus.REQUEST_COMPLETED,
    DeliveryKind.DECLINE: OrderStatus.DECLINED,
}


@pytest.fixture
def announced():
    """Every announcement, in the order made, as (what, delivery id): what the connector turns into
    events (`order.created`, `order.delivery.confirmed`, ...) in that order."""
    seen = []

    def receive(sender, *, what, delivery_id=None, **kwargs):
        seen.append((what, delivery_id))

    announcements.order_announced.connect(receive, dispatch_uid="test-announced")
    yield seen
    announcements.order_announced.disconnect(dispatch_uid="test-announced")


def _confirmed(announced) -> list[int]:
    """The deliveries of the `delivery_confirmed` announcements, in the order made."""
    return [delivery for what, delivery in announced if what == announcements.DELIVERY_CONFIRMED]


def _opened(fake_platform, *, staff_worked: bool) -> Order:
    if staff_worked:
        product_create(name="appraisal", fulfiller="staff_worked", raw={"entitlements": ENTITLEMENTS})
    else:
        product_create()
    name = "appraisal" if staff_worked else "address-verification"
    fake_platform.transaction_add(
        TXN, request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS}, product_name=name
    )
    order, _, _ = order_open(transaction_id=TXN, product_name=name)
    return order


def _stored(order: Order, kind: str) -> None:
    """A staff member's answer of `kind`, stored (sent by the order's next run)."""
    users = get_user_model().objects
    user = users.filter(username="appraiser.ann").first()
    if user is None:
        user = users.create_user("appraiser.ann", "ann@partner.example", "pw-ann-12345")
        staff.order_take(order_id=order.pk, user=user)
    if kind == DeliveryKind.STATUS_UPDATE:
        staff.status_update_post(order_id=order.pk, text="Inspection booked", user=user)
    elif kind == DeliveryKind.DECLINE:
        staff.order_decline(order_id=order.pk, reason="Outside our area", user=user)
    else:
        final = kind == DeliveryKind.FINAL
        staff.delivery_request(order_id=order.pk, final=final, partner_status="Half way", user=user)


def _callback(event_id: str, delivery: Delivery, *, versioned: bool) -> None:
    """The "processed" callback of `delivery`'s PATCH (naming its response version, or not)."""
    version = delivery.sequence if versioned else None
    delivery_confirm(transaction_id=TXN, event_id=event_id, version=version)


def _state(delivery: Delivery) -> str:
    return Delivery.objects.get(pk=delivery.pk).state


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "no-version"])
@pytest.mark.parametrize("callbacks", ["before-record", "after-record"])
@pytest.mark.parametrize("kind", list(SETTLED))
def test_each_callback_confirms_its_own_delivery_before_or_after_the_senders_record(
    fake_platform, tasks_sent, announced, kind, callbacks, versioned
):
    """An order whose last delivery of `kind` is being sent; for a staff member's answer, the
    acknowledgement before it was sent and awaits its callback. The callbacks come while the sender
    is held between the accepted PATCH and its record, or after the record: in the service's order
    without a version, the newer first with one (webhooks may arrive in any order; the newer's
    confirms the older with it, whose own callback then changes nothing)."""
    order = _opened(fake_platform, staff_worked=kind != DeliveryKind.RESULT)
    if kind not in (DeliveryKind.RESULT, DeliveryKind.ACKNOWLEDGEMENT):
        order_run(order_id=order.pk)  # the acknowledgement, sent
        _stored(order, kind)
    with Pause("sender.patched") as patched:
        run = Actor(lambda: order_run(order_id=order.pk), name="run")
        patched.reached()
        deliveries = list(Order.objects.get(pk=order.pk).deliveries.order_by("created_at", "id"))
        last = deliveries[-1]
        assert last.kind == kind and last.state == DeliveryState.PENDING  # accepted, not yet recorded
        # In the service's order without a version; the newest first with one.
        arriving = list(reversed(deliveries)) if versioned else deliveries
        if callbacks == "before-record":
            for number, delivery in enumerate(arriving):
                _callback(f"ev-{number}", delivery, versioned=versioned)
                assert _state(delivery) == DeliveryState.CONFIRMED, f"callback {number} confirmed another delivery"
        patched.resume()
        assert run.outcome().sent == 1
    if callbacks == "after-record":
        for number, delivery in enumerate(arriving):
            _callback(f"ev-{number}", delivery, versioned=versioned)
            assert _state(delivery) == DeliveryState.CONFIRMED, f"callback {number} confirmed another delivery"

    order.refresh_from_db()
    assert len(fake_platform.called("patch_response")) == len(deliveries)
    assert set(order.deliveries.values_list("state", flat=True)) == {DeliveryState.CONFIRMED}
    # One announcement each, in the order of the PATCHes (a later version's callback that came
    # first confirms the earlier ones with it: the service processed them before).
    assert _confirmed(announced) == [d.pk for d in deliveries]
    # The acknowledgement announced once, before any confirmation (the partner's system learns of
    # the order from it: a confirmation announced first would be one it never hears of).
    moments = [what for what, _ in announced if what != announcements.TAKEN]
    if order.staff_worked:
        assert moments.count(announcements.ACKNOWLEDGED) == 1
        assert moments[0] == announcements.ACKNOWLEDGED, moments
    assert order.status == SETTLED[kind]
    assert order.claimed_until is None
    # What the acceptance means, recorded once, whichever witness came first.
    steps = list(order.steps.values_list("name", flat=True))
    assert steps.count("acknowledged") == (1 if order.staff_worked else 0)
    assert steps.count("delivered") == (1 if kind == DeliveryKind.RESULT else 0)
    answers = [d for d in deliveries if d.kind not in (DeliveryKind.ACKNOWLEDGEMENT, DeliveryKind.RESULT)]
    assert steps.count("sent") == len(answers)


def test_two_callbacks_at_once_confirm_two_deliveries(fake_platform, tasks_sent, announced):
    """Two "processed" callbacks without a version for an order with two deliveries sent: the first
    is held inside its transaction, after its confirmation, while the second waits for it. Both
    deliveries are confirmed, each once (the second callback must not find the first's delivery
    taken and give up)."""
    order = _opened(fake_platform, staff_worked=True)
    order_run(order_id=order.pk)  # the acknowledgement
    _stored(order, DeliveryKind.PARTIAL)
    order_run(order_id=order.pk)  # the partial delivery
    deliveries = list(order.deliveries.order_by("created_at", "id"))
    assert [d.state for d in deliveries] == [DeliveryState.SENT, DeliveryState.SENT]

    with Pause("callback.confirmed") as confirmed:
        first = Actor(lambda: delivery_confirm(transaction_id=TXN, event_id="ev-1"), name="first callback")
        confirmed.reached()
        second = Actor(lambda: delivery_confirm(transaction_id=TXN, event_id="ev-2"), name="second callback")
        until_waiting_on_a_lock()  # the second waits for the first's transaction
        confirmed.resume()
        assert first.outcome() is not None
        assert second.outcome() is not None, "the second callback found no delivery to confirm"

    assert [_state(d) for d in deliveries] == [DeliveryState.CONFIRMED, DeliveryState.CONFIRMED]
    assert sorted(_confirmed(announced)) == sorted(d.pk for d in deliveries)


def test_a_callback_applied_twice_confirms_one_delivery(fake_platform, tasks_sent, announced):
    """The same "processed" event handled a second time (its task run again after a worker died
    before marking it done, or replayed by staff), with no version: the second changes nothing,
    and the next delivery waits for its own callback."""
    order = _opened(fake_platform, staff_worked=True)
    order_run(order_id=order.pk)  # the acknowledgement
    _stored(order, DeliveryKind.PARTIAL)
    order_run(order_id=order.pk)  # the partial delivery
    ack, sent = order.deliveries.order_by("created_at", "id")

    delivery_confirm(transaction_id=TXN, event_id="ev-1")
    delivery_confirm(transaction_id=TXN, event_id="ev-1")

    assert (_state(ack), _state(sent)) == (DeliveryState.CONFIRMED, DeliveryState.SENT)
    assert _confirmed(announced) == [ack.pk]
    delivery_confirm(transaction_id=TXN, event_id="ev-2")
    assert _state(sent) == DeliveryState.CONFIRMED and _confirmed(announced) == [ack.pk, sent.pk]


def test_a_delivery_confirmed_between_the_runs_read_and_its_fence_is_not_sent_again(
    fake_platform, tasks_sent, announced
):
    """The final delivery's PATCH was accepted but its record was lost (the database away): it waits
    again, tried once, with its response version. Its next run reads it as waiting; before the
    run's fence, the late callback of that first PATCH confirms it. The run must not PATCH it a
    second time (a 2,000-order schedule saw two completing PATCHes so)."""
    order = _opened(fake_platform, staff_worked=True)
    order_run(order_id=order.pk)  # the acknowledgement
    delivery_confirm(transaction_id=TXN, event_id="ev-ack", version=1)
    _stored(order, DeliveryKind.FINAL)
    final = order.deliveries.get(kind=DeliveryKind.FINAL)
    Delivery.objects.filter(pk=final.pk).update(attempts=1, sequence=2)  # accepted; its record lost
    patches = len(fake_platform.called("patch_response"))

    with Pause("sender.fencing") as fencing:
        run = Actor(lambda: order_run(order_id=order.pk), name="run")
        fencing.reached()
        delivery_confirm(transaction_id=TXN, event_id="ev-final", version=2)
        fencing.resume()
        assert run.outcome().sent == 0

    assert len(fake_platform.called("patch_response")) == patches  # not sent again
    order.refresh_from_db()
    assert _state(final) == DeliveryState.CONFIRMED and order.status == OrderStatus.REQUEST_COMPLETED
    assert order.claimed_until is None
    assert _confirmed(announced).count(final.pk) == 1


def _record_lost(monkeypatch):
    """The sender's record of an accepted PATCH fails as when our Redis or database is away at that
    moment: the service has the PATCH, our rows do not say so."""
    from partner.fulfillment.sending import sender

    def away(order, delivery):
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(sender, "_sent", away)


def _in_doubt(fake_platform, monkeypatch, kind: str) -> tuple[Order, Delivery]:
    """A staff-worked order, its acknowledgement sent and confirmed, and a delivery of `kind` whose
    PATCH the service accepted while its record was lost: it waits again, its answer unrecorded."""
    order = _opened(fake_platform, staff_worked=True)
    order_run(order_id=order.pk)  # the acknowledgement
    delivery_confirm(transaction_id=TXN, event_id="ev-ack", version=1)
    _stored(order, kind)
    with monkeypatch.context() as patched:
        _record_lost(patched)
        outcome = order_run(order_id=order.pk)
    assert outcome.retry is not None and outcome.retry.waiting_for == "Redis"
    delivery = order.deliveries.get(kind=kind)
    assert delivery.state == DeliveryState.PENDING and delivery.unanswered_since is not None
    return order, delivery


def test_a_patch_whose_record_was_lost_waits_for_its_callback_instead_of_going_twice(
    fake_platform, tasks_sent, announced, monkeypatch
):
    """The final delivery's PATCH was accepted, then our record of it failed (Redis away). The next
    run must not PATCH it again while its callback may still come (a 2,000-order schedule saw a
    second PATCH of a delivery so, and the callbacks then outnumbered the deliveries): it gives the
    order back to wait, uncounted; the callback confirms the delivery and completes the order."""
    order, final = _in_doubt(fake_platform, monkeypatch, DeliveryKind.FINAL)
    patches = len(fake_platform.called("patch_response"))  # the acknowledgement's and the final's

    outcome = order_run(order_id=order.pk)

    assert isinstance(outcome.error, AnswerAwaited) and not outcome.retry.counted
    assert 0 < outcome.retry.countdown <= settings.CALLBACK_WAIT_SECONDS
    assert len(fake_platform.called("patch_response")) == patches  # not sent again
    order.refresh_from_db()
    assert order.claimed_until is None and order.next_attempt_at is not None
    assert "waiting up to" in order.last_error

    delivery_confirm(transaction_id=TXN, event_id="ev-final", version=2)
    order.refresh_from_db()
    assert _state(final) == DeliveryState.CONFIRMED and order.status == OrderStatus.REQUEST_COMPLETED
    assert _confirmed(announced).count(final.pk) == 1
    assert order_run(order_id=order.pk).sent == 0  # the retry that comes later finds nothing to do
    assert len(fake_platform.called("patch_response")) == patches


def test_a_patch_without_its_callback_is_sent_again_once_the_wait_is_over(
    fake_platform, tasks_sent, announced, monkeypatch
):
    """No callback came within CALLBACK_WAIT_SECONDS (the service never took the PATCH, or its
    callback was lost): the delivery is sent again, with the same response version."""
    order, partial = _in_doubt(fake_platform, monkeypatch, DeliveryKind.PARTIAL)
    patches = len(fake_platform.called("patch_response"))
    waited = timezone.now() - timedelta(seconds=settings.CALLBACK_WAIT_SECONDS + 1)
    Delivery.objects.filter(pk=partial.pk).update(unanswered_since=waited)

    assert order_run(order_id=order.pk).sent == 1

    partial.refresh_from_db()
    assert len(fake_platform.called("patch_response")) == patches + 1
    assert (partial.state, partial.sequence, partial.attempts) == (DeliveryState.SENT, 2, 2)
    assert partial.unanswered_since is None


def test_an_answered_refusal_is_not_a_patch_in_doubt(fake_platform, tasks_sent, monkeypatch):
    """A PATCH the service answered with a 503 did not go through: it is tried again by the retry
    rule, with no wait for a callback."""
    order = _opened(fake_platform, staff_worked=True)
    fake_platform.fail("patch_response", ServiceUnavailableError("service unavailable", status=503))
    outcome = order_run(order_id=order.pk)
    assert outcome.retry is not None and not isinstance(outcome.error, AnswerAwaited)
    ack = order.deliveries.get()
    assert ack.state == DeliveryState.PENDING and ack.unanswered_since is None
    assert order_run(order_id=order.pk).sent == 1


@pytest.mark.parametrize("callback", ["before-the-runs-lock", "while-the-run-holds-the-lock"])
def test_a_callback_of_a_patch_in_doubt_and_the_run_that_awaits_it(
    fake_platform, tasks_sent, announced, monkeypatch, callback
):
    """A partial delivery in doubt and a final stored after it. The partial's callback comes as the
    run finds the partial in doubt: either between the run's read and its lock (the run then finds
    it confirmed and sends the final at once), or while the run holds the order's lock, about to
    give the order back to wait (the callback, behind that lock, then finds the order free and hands
    it to a run after its commit: no wake-up lost, no wait for the retry's countdown)."""
    order, partial = _in_doubt(fake_platform, monkeypatch, DeliveryKind.PARTIAL)
    _stored(order, DeliveryKind.FINAL)
    patches = len(fake_platform.called("patch_response"))
    tasks_sent.clear()

    if callback == "before-the-runs-lock":
        with Pause("sender.unanswered") as unanswered:
            run = Actor(lambda: order_run(order_id=order.pk), name="run")
            unanswered.reached()
            delivery_confirm(transaction_id=TXN, event_id="ev-partial", version=2)
            unanswered.resume()
            assert run.outcome().sent == 1  # the final, at once
        assert len(fake_platform.called("patch_response")) == patches + 1
    else:
        with Pause("sender.unanswered_locked") as locked:
            run = Actor(lambda: order_run(order_id=order.pk), name="run")
            locked.reached()
            confirm = Actor(
                lambda: delivery_confirm(transaction_id=TXN, event_id="ev-partial", version=2), name="callback"
            )
            until_waiting_on_a_lock()
            locked.resume()
            assert isinstance(run.outcome().error, AnswerAwaited)
            assert confirm.outcome() is not None
        woken = [kwargs for name, kwargs in tasks_sent if name == ORDER_RUN_TASK]
        assert woken == [{"order_id": order.pk}], tasks_sent
        assert order_run(order_id=order.pk).sent == 1  # the woken run sends the final
        assert len(fake_platform.called("patch_response")) == patches + 1

    assert _state(partial) == DeliveryState.CONFIRMED
    assert order.deliveries.get(kind=DeliveryKind.FINAL).state == DeliveryState.SENT


def test_a_final_delivery_s_callback_writes_its_lines_in_one_insert(fake_platform, tasks_sent, announced):
    """The callback that completes a staff-worked order records its lines (the delivery confirmed,
    the order completed) together, in its transaction."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    order = _opened(fake_platform, staff_worked=True)
    order_run(order_id=order.pk)  # the acknowledgement
    delivery_confirm(transaction_id=TXN, event_id="ev-ack", version=1)
    _stored(order, DeliveryKind.FINAL)
    order_run(order_id=order.pk)  # the final delivery
    with CaptureQueriesContext(connection) as queries:
        delivery_confirm(transaction_id=TXN, event_id="ev-final", version=2)
    inserts = [query["sql"] for query in queries.captured_queries if query["sql"].startswith("INSERT")]
    assert len(inserts) == 1, inserts
    assert Order.objects.get(pk=order.pk).status == OrderStatus.REQUEST_COMPLETED
    assert list(order.steps.order_by("-id").values_list("name", flat=True)[:2]) == ["completed", "confirmed"]
