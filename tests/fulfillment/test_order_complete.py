"""The processed callback may land before the worker that sent the PATCH has recorded it."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.orders.services import order_complete

pytestmark = pytest.mark.django_db


def test_callback_before_the_delivery_is_recorded_marks_it_delivered():
    Order.objects.create(transaction_id="t-race", status=OrderStatus.IN_PROGRESS, resource_id="r-1")

    order = order_complete(transaction_id="t-race", event_id="e-1")

    assert order.status == OrderStatus.REQUEST_COMPLETED
    assert order.delivered_at is not None and order.completed_at is not None
    assert order.resource_id == "r-1"


def test_callback_keeps_the_recorded_delivery_time():
    delivered = timezone.now() - timedelta(seconds=5)
    Order.objects.create(transaction_id="t-in-order", status=OrderStatus.RESPONSE_DELIVERED, delivered_at=delivered)

    order = order_complete(transaction_id="t-in-order", event_id="e-2")

    assert order.delivered_at == delivered
    assert order.completed_at > delivered


def test_retries_exhausted_fail_an_active_order_with_the_last_error():
    from partner.fulfillment.models import FailureCode
    from partner.fulfillment.runs import order_give_up

    order = Order.objects.create(transaction_id="t-given-up", status=OrderStatus.IN_PROGRESS)
    order_give_up(order_id=order.pk, error="ServiceUnavailableError: slot request: service unavailable")
    order.refresh_from_db()
    assert order.status == OrderStatus.FAILED
    assert order.failure_code == FailureCode.RETRIES_EXHAUSTED
    assert "slot request: service unavailable" in order.failure_reason


def test_giving_up_never_undoes_a_completed_order():
    from partner.fulfillment.runs import order_give_up

    order = Order.objects.create(transaction_id="t-done", status=OrderStatus.REQUEST_COMPLETED)
    order_give_up(order_id=order.pk, error="late failure")
    order.refresh_from_db()
    assert order.status == OrderStatus.REQUEST_COMPLETED


def test_a_replayed_callback_changes_nothing():
    Order.objects.create(transaction_id="t-twice", status=OrderStatus.RESPONSE_DELIVERED)
    first = order_complete(transaction_id="t-twice", event_id="e-1")

    again = order_complete(transaction_id="t-twice", event_id="e-1")

    assert again.completed_at == first.completed_at
    assert again.event_id == "e-1"
    assert list(again.steps.filter(name="completed").values_list("detail", flat=True)) == ["event e-1"]
