"""What a release means for a connected order (issue 36, low): staff who took an order over and
release it give it back to the staff, not to the system; only an explicit hand-back does that."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from partner.connector import answers
from partner.connector.answers import TakenOver
from partner.connector.models import Event
from partner.connector.services import ConnectionRefused, order_hand_back, order_take_over
from partner.fulfillment.models import Delivery, DeliveryKind, Order
from partner.fulfillment.staff import services as staff
from tests.helpers.staff_orders import staff_member

pytestmark = pytest.mark.django_db


def test_a_released_order_stays_with_the_staff_until_handed_back(order, connection, tasks_sent):
    ann = staff_member("staff.ann")
    order_take_over(order_id=order.pk, user=ann)
    staff.order_release(order_id=order.pk, user=ann)
    assert Order.objects.get(pk=order.pk).assigned_to is None

    for attempt in (
        lambda: answers.order_acknowledge(connection=connection, order_id=order.pk),
        lambda: answers.status_update_post(connection=connection, order_id=order.pk, text="Mine again"),
    ):
        with pytest.raises(TakenOver, match="released it to the staff"):
            attempt()
    assert Order.objects.get(pk=order.pk).assigned_to is None  # the system took nothing back
    assert not Delivery.objects.filter(order=order, kind=DeliveryKind.STATUS_UPDATE).exists()

    order_hand_back(order_id=order.pk, user=ann)
    assert Order.objects.get(pk=order.pk).assigned_to == connection.user
    with pytest.raises(ConnectionRefused, match="works this order already"):
        order_hand_back(order_id=order.pk, user=ann)  # once: no second event
    assert Event.objects.filter(connection=connection, order=order).last().type == "order.handed_back"
    assert order.steps.filter(name="handed_back").exists()
    answers.status_update_post(connection=connection, order_id=order.pk, text="Inspection booked")


def test_handing_back_is_an_admin_action_of_the_take_over_permission(
    client, order, connection, tasks_sent, django_capture_on_commit_callbacks
):
    viewer = staff_member("staff.viewer")
    viewer.user_permissions.add(Permission.objects.get(codename="view_connectedorder"))
    client.force_login(viewer)
    order_take_over(order_id=order.pk, user=staff_member("staff.ann"))
    url = reverse("admin:connector_connectedorder_changelist")
    client.post(url, {"action": "hand_back", "_selected_action": [order.pk]})
    assert Order.objects.get(pk=order.pk).assigned_to.username == "staff.ann"  # refused: no permission

    with django_capture_on_commit_callbacks(execute=True):  # as its commit would: the kept permissions renewed
        viewer.user_permissions.add(Permission.objects.get(codename="take_over_connectedorder"))
    answer = client.post(url, {"action": "hand_back", "_selected_action": [order.pk]}, follow=True)
    assert "1 order(s) handed back" in answer.content.decode()
    assert Order.objects.get(pk=order.pk).assigned_to == connection.user
