"""Who works an order and by when, rule by rule (`orders/services.py`): the one write of an
assignment (`order_assign`, called by the staff's take and by the connector alike) with its step and
its announcement, and the due time of a staff-worked order (`due_at`). And the staff's new-order
notice, requested by the receiver of the acknowledgement's announcement (`staff/notices.py`), so
the sender never imports the staff's package.
"""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from partner.fulfillment.enqueue import STAFF_NOTICE_TASK
from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.services import due_at, order_assign
from partner.fulfillment.staff import notices
from partner.fulfillment.staff import services as staff

pytestmark = pytest.mark.django_db


@pytest.fixture
def announced():
    """The announcements made, as (order_id, what)."""
    heard = []

    def receive(sender, *, order_id, what, **kwargs):
        heard.append((order_id, what))

    announcements.order_announced.connect(receive, dispatch_uid="test-assign-announced")
    yield heard
    announcements.order_announced.disconnect(dispatch_uid="test-assign-announced")


@pytest.fixture
def people(django_user_model):
    return SimpleNamespace(
        ann=django_user_model.objects.create_user("ann", is_staff=True),
        bob=django_user_model.objects.create_user("bob", is_staff=True),
        system=django_user_model.objects.create_user("system.acme"),
    )


def staff_order(number: int = 1, **fields) -> Order:
    return Order.objects.create(
        transaction_id=f"txn-assign-{number}",
        product_name="appraisal",
        status=OrderStatus.WITH_STAFF,
        staff_worked=True,
        **fields,
    )


def steps(order: Order) -> list[tuple[str, str, str]]:
    return list(order.steps.order_by("id").values_list("name", "detail", "actor"))


def test_a_free_order_is_assigned_with_its_step_and_announced(people, announced):
    order = staff_order()
    before = timezone.now()

    assert order_assign(order=order, user=people.system) is True

    stored = Order.objects.get(pk=order.pk)
    assert stored.assigned_to == people.system and stored.assigned_at >= before
    assert stored.updated_at >= before
    assert (order.assigned_to, order.assigned_at) == (people.system, stored.assigned_at)  # the caller's copy too
    assert steps(order) == [("taken", "", "system.acme")]
    assert announced == [(order.pk, announcements.TAKEN)]


def test_an_order_someone_holds_is_taken_over_naming_them(people, announced):
    order = staff_order(assigned_to=people.ann, assigned_at=timezone.now())

    assert order_assign(order=order, user=people.bob) is True

    assert Order.objects.get(pk=order.pk).assigned_to == people.bob
    assert steps(order) == [("taken_over", "from ann", "bob")]
    assert announced == [(order.pk, announcements.TAKEN)]


def test_nothing_is_written_when_someone_took_it_since_the_caller_read_it(people, announced):
    order = staff_order()  # read free by the caller ...
    Order.objects.filter(pk=order.pk).update(assigned_to=people.ann)  # ... then taken by ann

    assert order_assign(order=order, user=people.system) is False

    assert Order.objects.get(pk=order.pk).assigned_to == people.ann
    assert steps(order) == [] and announced == []


def test_nothing_is_written_when_it_is_theirs_already(people, announced):
    held_since = timezone.now() - timedelta(hours=1)
    order = staff_order(assigned_to=people.ann, assigned_at=held_since)

    assert order_assign(order=order, user=people.ann) is True

    assert Order.objects.get(pk=order.pk).assigned_at == held_since
    assert steps(order) == [] and announced == []


def test_the_staff_take_writes_through_the_one_assignment(people, announced):
    order = staff_order(assigned_to=people.ann, assigned_at=timezone.now())

    with pytest.raises(staff.StaffActionRefused, match="ann works this order"):
        staff.order_take(order_id=order.pk, user=people.bob)
    assert steps(order) == [] and announced == []

    staff.order_take(order_id=order.pk, user=people.bob, take_over=True)
    assert steps(order) == [("taken_over", "from ann", "bob")]
    assert announced == [(order.pk, announcements.TAKEN)]


def test_an_order_is_due_its_products_turnaround_after_it_arrived():
    arrived = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
    assert due_at(SimpleNamespace(turnaround_hours=48), arrived) == datetime(2026, 11, 29, 9, 30, tzinfo=UTC)
    assert due_at(SimpleNamespace(turnaround_hours=None), arrived) is None  # no turnaround promised
    assert due_at(SimpleNamespace(turnaround_hours=0), arrived) is None
    assert due_at(None, arrived) is None  # no product


def test_the_acknowledgement_announced_requests_the_new_order_notice(tasks_sent, django_capture_on_commit_callbacks):
    order = staff_order(number=2)
    with django_capture_on_commit_callbacks(execute=True):
        announcements.order_announce(order_id=order.pk, what=announcements.ACKNOWLEDGED, delivery_id=None)
    assert tasks_sent == [(STAFF_NOTICE_TASK, {"order_id": order.pk, "notice": notices.NEW_ORDER})]


def test_no_other_announcement_requests_a_notice(tasks_sent, django_capture_on_commit_callbacks):
    order = staff_order(number=3)
    with django_capture_on_commit_callbacks(execute=True):
        for what in (announcements.TAKEN, announcements.DELIVERY_CONFIRMED, announcements.COMPLETED):
            announcements.order_announce(order_id=order.pk, what=what)
    assert tasks_sent == []
