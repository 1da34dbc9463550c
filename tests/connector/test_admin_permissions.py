"""Who may do what in the connector's admin: viewing runs nothing. Every action and the take-over's
POST need a change permission, secret rotation and the take-over a permission of their own (through
the admin's pages, the Django test client, as logins holding only some permissions)."""

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.connector.models import Connection, Event, EventState
from partner.fulfillment.models import Order

pytestmark = pytest.mark.django_db


def login(django_user_model, username, codenames):
    user = django_user_model.objects.create_user(username, password="a-long-password-1", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="connector", codename__in=codenames))
    client = Client()
    client.force_login(user)
    return client


VIEW_ONLY = ["view_connection", "view_event", "view_eventattempt", "view_connectedorder"]


def snapshot(connection, order):
    connection = Connection.objects.get(pk=connection.pk)
    events = list(Event.objects.filter(order=order).order_by("pk").values_list("type", "state", "attempts"))
    order = Order.objects.get(pk=order.pk)
    products = sorted(connection.products.values_list("pk", flat=True))
    return (connection.secrets(), connection.enabled, connection.endpoint_url, products, events, order.assigned_to_id)


def test_a_view_only_login_runs_no_action_and_no_post(django_user_model, order, connection, connected_product):
    viewer = login(django_user_model, "viewer", VIEW_ONLY)
    other = Product.objects.create(name="title", fulfiller=CONNECTED, turnaround_hours=24)
    Connection.objects.filter(pk=connection.pk).update(enabled=False)
    Connection.objects.filter(pk=connection.pk).update(signing_secrets="\n".join([*connection.secrets(), "whsec_b"]))
    Event.objects.filter(order=order).update(state=EventState.FAILED)
    connections = reverse("admin:connector_connection_changelist")
    assert viewer.get(connections).status_code == 200  # it reads
    before = snapshot(connection, order)

    tried = []
    for action, extra in [
        ("replay_failed", {}),
        ("replay_since", {"since": "2000-01-01 00:00"}),
        ("enable", {}),
        ("product_move_here", {"product": other.pk}),
        ("secret_add", {}),
        ("secret_drop_oldest", {}),
        ("delete_selected", {"post": "yes"}),
    ]:
        tried.append(viewer.post(connections, {"action": action, "_selected_action": [connection.pk], **extra}))
    event = Event.objects.get(order=order)
    tried.append(
        viewer.post(reverse("admin:connector_event_changelist"), {"action": "replay", "_selected_action": [event.pk]})
    )
    orders = reverse("admin:connector_connectedorder_changelist")
    tried.append(viewer.post(orders, {"action": "take_over", "_selected_action": [order.pk]}))
    tried.append(viewer.post(orders, {"action": "hand_back", "_selected_action": [order.pk]}))
    page = reverse("admin:connector_connectedorder_change", args=[order.pk])
    tried.append(viewer.post(page, {"_take_over_confirmed": "1"}))
    tried.append(
        viewer.post(
            reverse("admin:connector_connection_change", args=[connection.pk]),
            {"name": "acme-amc", "endpoint_url": "https://evil.example/", "enabled": "on", "event_types": "[]"},
        )
    )

    assert all(answer.status_code in (200, 302, 403) for answer in tried)
    assert snapshot(connection, order) == before  # nothing changed
    assert Connection.objects.filter(pk=connection.pk).exists()
    shown = viewer.get(page).content.decode()
    assert "Take over by hand" not in shown  # no button it may not press


def test_the_change_permission_does_not_rotate_secrets_nor_take_over(django_user_model, order, connection):
    changer = login(django_user_model, "changer", [*VIEW_ONLY, "change_connection"])
    held = connection.secrets()
    connections = reverse("admin:connector_connection_changelist")
    changer.post(connections, {"action": "secret_add", "_selected_action": [connection.pk]})
    changer.post(reverse("admin:connector_connectedorder_change", args=[order.pk]), {"_take_over_confirmed": "1"})
    assert Connection.objects.get(pk=connection.pk).secrets() == held
    assert Order.objects.get(pk=order.pk).assigned_to == connection.user

    rotator = login(django_user_model, "rotator", [*VIEW_ONLY, "change_connection", "rotate_connection_secrets"])
    rotator.post(connections, {"action": "secret_add", "_selected_action": [connection.pk]})
    assert len(Connection.objects.get(pk=connection.pk).secrets()) == len(held) + 1


def test_order_staff_take_a_connected_order_over_and_change_no_connection(order, connection):
    from partner.core.staff_accounts import staff_account_set

    user, _ = staff_account_set(username="worker", password="a-long-password-1")
    worker = Client()
    worker.force_login(user)
    connections = reverse("admin:connector_connection_changelist")
    worker.post(connections, {"action": "secret_add", "_selected_action": [connection.pk]})
    assert Connection.objects.get(pk=connection.pk).secrets() == connection.secrets()

    page = reverse("admin:connector_connectedorder_change", args=[order.pk])
    assert "Take over by hand" in worker.get(page).content.decode()
    assert worker.post(page, {"_take_over_confirmed": "1"}).status_code == 302
    assert Order.objects.get(pk=order.pk).assigned_to == user
