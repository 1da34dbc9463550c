"""One wake-up protocol: work stored for an order held by a run is sent by that run, at once.

Whoever stores work for an order hands the order to its run after commit; a task that finds the
order held by a running send ends (its holder renews the lease). So the holder must not release
the order while something stored before its release waits. Deterministic interleavings
(`tests/helpers/interleaving.py`): the run held while it sends a delivery (`sender.patched`), or
after its last look for work and before its release (`run.looked`), while a staff member's answer
is stored and its task runs and finds the order held. The answer must reach the service in that
same run, not after a sweep minutes later.
"""

import threading

import pytest
from django.contrib.auth import get_user_model

from partner.fulfillment.models import DeliveryKind, DeliveryState, Order, OrderStatus
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_run
from partner.fulfillment.staff import services as staff
from tests.helpers.interleaving import Actor, Pause
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db(transaction=True)

TXN = "txn-wake-1"
LOAN = {
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"}
}


@pytest.fixture
def order(fake_platform, tasks_sent):
    """A staff-worked order, acknowledged, taken by a staff member (`order.worker`)."""
    product_create(name="appraisal", fulfiller="staff_worked")
    fake_platform.transaction_add(
        TXN, request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS}, product_name="appraisal"
    )
    order, _, _ = order_open(transaction_id=TXN, product_name="appraisal")
    order_run(order_id=order.pk)
    order.worker = get_user_model().objects.create_user("appraiser.ann", "ann@partner.example", "pw-ann-12345")
    staff.order_take(order_id=order.pk, user=order.worker)
    return order


def partial(order, text="Inspection booked"):
    return staff.delivery_request(order_id=order.pk, final=False, partner_status=text, user=order.worker)


def final(order):
    return staff.delivery_request(order_id=order.pk, final=True, partner_status="Appraisal complete", user=order.worker)


def answered_and_woken(store):
    """A staff member's answer stored, and its task run at once (as a free worker would): it finds
    the order held by the running send and ends."""
    delivery = store()
    assert order_run(order_id=delivery.order_id).held_for > 0
    return delivery


def patched_statuses(fake_platform) -> list:
    return [payload.get("partnerStatus") for _, payload in fake_platform.called("patch_response")]


def assert_all_sent(order, fake_platform, statuses):
    order = Order.objects.get(pk=order.pk)
    assert patched_statuses(fake_platform) == ["Order received", *statuses]  # each once, in order
    assert not order.deliveries.filter(state=DeliveryState.PENDING).exists()
    assert order.claimed_until is None
    return order


def test_an_answer_stored_while_the_previous_delivery_is_being_sent_is_sent_by_that_run(order, fake_platform):
    partial(order)
    with Pause("sender.patched") as patched:
        run = Actor(lambda: order_run(order_id=order.pk), name="run")
        patched.reached()  # the partial delivery's PATCH accepted, not recorded yet
        answered_and_woken(lambda: final(order))
        patched.resume()
        assert run.outcome().sent == 2
    done = assert_all_sent(order, fake_platform, ["Inspection booked", "Appraisal complete"])
    assert done.status == OrderStatus.RESPONSE_DELIVERED


def test_an_answer_stored_between_the_runs_last_look_and_its_release_is_sent_by_that_run(order, fake_platform):
    partial(order)
    with Pause("run.looked") as looked:
        run = Actor(lambda: order_run(order_id=order.pk), name="run")
        looked.reached()  # the partial sent, nothing else waited when the run looked
        answered_and_woken(lambda: final(order))
        looked.resume()
        assert run.outcome().sent == 2
    done = assert_all_sent(order, fake_platform, ["Inspection booked", "Appraisal complete"])
    assert done.status == OrderStatus.RESPONSE_DELIVERED


def test_two_answers_at_once_are_both_sent_in_the_order_they_were_made(order, fake_platform):
    """Two answers stored at once by two workers, each running its task at once: the first's run
    holds the order and has looked for work when the second commits; the second's task finds the
    order held. Both are sent, in order, each once."""
    first_run = {}
    with Pause("run.looked", when=lambda: "first" in first_run.get("thread", "")) as looked:

        def first():
            first_run["thread"] = threading.current_thread().name
            partial(order, "First answer")
            return order_run(order_id=order.pk)

        one = Actor(first, name="first answer")
        looked.reached()
        two = Actor(lambda: answered_and_woken(lambda: partial(order, "Second answer")), name="second answer")
        assert two.outcome().kind == DeliveryKind.PARTIAL
        looked.resume()
        assert one.outcome().sent == 2
    done = assert_all_sent(order, fake_platform, ["First answer", "Second answer"])
    assert done.status == OrderStatus.WITH_STAFF
