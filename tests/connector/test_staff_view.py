"""A connected order is its system's work: staff are not told of it ("New order", Orders to work)
until it is taken over, has a failed delivery, or is past due."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from partner.catalog.models import Product
from partner.catalog.product_cache import catalog_cache_drop
from partner.connector.services import order_take_over
from partner.fulfillment.models import Delivery, DeliveryKind, Order
from partner.fulfillment.staff import notices
from tests.helpers.staff_orders import staff_member

pytestmark = pytest.mark.django_db


@pytest.fixture
def told(connected_product):
    Product.objects.filter(pk=connected_product.pk).update(staff_email="appraisals@partner.example")
    catalog_cache_drop()


def queue(staff, **params) -> str:
    return staff.get(reverse("admin:fulfillment_stafforder_changelist"), params).content.decode()


def test_no_new_order_notice_while_its_system_works_it(told, order, connection, mailoutbox, tasks_sent):
    assert order.assigned_to == connection.user
    assert notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER) is False
    Order.objects.filter(pk=order.pk).update(created_at=timezone.now() - timedelta(hours=2))
    assert notices.notices_due() == 0  # nor enqueued again by the periodic pass
    assert mailoutbox == []


def test_the_new_order_notice_once_staff_take_it_over(told, order, mailoutbox):
    order_take_over(order_id=order.pk, user=staff_member())
    assert notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER) is True
    [mail] = mailoutbox
    assert mail.subject.startswith("New order")


def test_a_past_due_notice_for_a_system_worked_order(told, order, mailoutbox):
    Order.objects.filter(pk=order.pk).update(due_at=timezone.now() - timedelta(minutes=1))
    assert notices.staff_notice_send(order_id=order.pk, notice=notices.PAST_DUE) is True
    assert mailoutbox[0].subject.startswith("Order past due")


def test_orders_to_work_leave_out_a_system_s_order_until_it_needs_staff(staff, order, connection):
    reference = order.reference_number
    assert reference and reference not in queue(staff)
    assert reference in queue(staff, worked="system") and reference in queue(staff, worked="all")
    # past due
    Order.objects.filter(pk=order.pk).update(due_at=timezone.now() - timedelta(minutes=1))
    assert reference in queue(staff)
    Order.objects.filter(pk=order.pk).update(due_at=timezone.now() + timedelta(hours=1))
    assert reference not in queue(staff)
    # failing: a delivery the platform refused for good
    failed = Delivery.objects.create(order=order, kind=DeliveryKind.STATUS_UPDATE, state="failed", partner_status="x")
    assert reference in queue(staff)
    failed.delete()
    # taken over
    order_take_over(order_id=order.pk, user=staff_member())
    assert reference in queue(staff)
    assert reference not in queue(staff, worked="system")
