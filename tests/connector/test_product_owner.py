"""One connection per product: a second claim is refused naming the current one (the admin's form,
the service, the database), and a product is moved from one connection to another on purpose, its
open orders with it."""

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from partner.connector.answers import OrderNotFound, order_of
from partner.connector.events import connection_of
from partner.connector.models import Connection, Event
from partner.connector.services import ConnectionRefused, connection_create, connection_demo, product_move
from partner.fulfillment.models import Order
from tests.helpers.connector import connected_order

pytestmark = pytest.mark.django_db


def _add(staff, products):
    return staff.post(
        reverse("admin:connector_connection_add"),
        {
            "name": "title-desk",
            "endpoint_url": "https://title.example/hooks",
            "enabled": "on",
            "event_types": "[]",
            "products": products,
            "notify_email": "",
        },
    )


def test_the_admin_refuses_a_second_connection_for_a_product_naming_the_first(staff, connection, connected_product):
    answer = _add(staff, [connected_product.pk])
    page = answer.content.decode()
    assert answer.status_code == 200
    assert "One connection per product: appraisal is worked by acme-amc" in page
    assert "Move a product to this connection" in page
    assert not Connection.objects.filter(name="title-desk").exists()


def test_the_admin_refuses_adding_a_claimed_product_to_another_connection(staff, connection, connected_product):
    other = connection_create(name="title-desk", endpoint_url="https://title.example/hooks").connection
    answer = staff.post(
        reverse("admin:connector_connection_change", args=[other.pk]),
        {
            "name": "title-desk",
            "endpoint_url": "https://title.example/hooks",
            "enabled": "on",
            "event_types": "[]",
            "products": [connected_product.pk],
            "notify_email": "",
        },
    )
    assert answer.status_code == 200 and "appraisal is worked by acme-amc" in answer.content.decode()
    assert list(other.products.all()) == []
    # its own connection keeps saving it
    answer = staff.post(
        reverse("admin:connector_connection_change", args=[connection.pk]),
        {
            "name": "acme-amc",
            "endpoint_url": connection.endpoint_url,
            "enabled": "on",
            "event_types": "[]",
            "products": [connected_product.pk],
            "notify_email": "ops@x.example",
        },
    )
    assert answer.status_code == 302


def test_the_service_and_the_database_refuse_a_second_claim(connection, connected_product):
    with pytest.raises(ConnectionRefused, match="appraisal is worked by acme-amc"):
        connection_create(name="title-desk", products=[connected_product])
    assert not Connection.objects.filter(name="title-desk").exists()
    other = connection_create(name="title-desk").connection
    # past every form, the unique index holds: a row is refused, and the many-to-many's add (which
    # ignores conflicts) adds nothing
    with pytest.raises(IntegrityError), transaction.atomic():
        Connection.products.through.objects.create(connection=other, product=connected_product)
    other.products.add(connected_product)
    assert list(other.products.all()) == [] and connection_of("appraisal") == connection


def test_a_product_is_moved_with_its_open_orders(staff, fake_platform, order, connection, connected_product):
    other = connection_create(name="title-desk", endpoint_url="https://title.example/hooks").connection
    answer = staff.post(
        reverse("admin:connector_connection_changelist"),
        {"action": "product_move_here", "_selected_action": [other.pk], "product": connected_product.pk},
        follow=True,
    )
    assert (
        "ppraisal is worked by title-desk from now on (from acme-amc, with its open orders)" in answer.content.decode()
    )
    assert list(other.products.all()) == [connected_product] and list(connection.products.all()) == []
    # the open order: the new system works it and is told of it; the old one no longer sees it
    order = Order.objects.get(pk=order.pk)
    assert order.assigned_to == other.user
    [told] = Event.objects.filter(connection=other, order=order)
    assert told.type == "order.created" and told.payload["data"]["order"]["version"] == 1
    # handed by the one assignment: its step names both systems; the old one is told nothing more
    step = order.steps.filter(name="taken_over").values_list("detail", "actor").get()
    assert step == (f"from {connection.user.get_username()}", other.user.get_username())
    assert [e.type for e in Event.objects.filter(connection=connection, order=order)] == ["order.created"]
    assert told.payload["data"]["request"]["loan"]["property"]["postalCode"] == "94105"
    with pytest.raises(OrderNotFound):
        order_of(connection=connection, order_id=order.pk)
    assert order_of(connection=other, order_id=order.pk) == order
    # and the next order goes to it
    assert connection_of("appraisal") == other
    later = connected_order(fake_platform, transaction_id="txn-after-move", product_name="appraisal")
    assert later.assigned_to == other.user
    # moving it again to where it is changes nothing
    assert product_move(product_id=connected_product.pk, connection_id=other.pk) is None


def test_a_staff_taken_order_stays_with_staff_when_the_product_moves(order, connection, connected_product):
    from partner.connector.services import order_take_over
    from tests.helpers.staff_orders import staff_member

    person = staff_member("staff.ann")
    order_take_over(order_id=order.pk, user=person)
    other = connection_create(name="title-desk").connection
    assert product_move(product_id=connected_product.pk, connection_id=other.pk) == "acme-amc"
    assert Order.objects.get(pk=order.pk).assigned_to == person
    assert not Event.objects.filter(connection=other).exists()


def test_the_demo_never_takes_back_a_moved_product(settings, connected_product):
    settings.DEBUG = True
    demo = connection_demo(product_name="appraisal")
    own = connection_create(name="title-desk").connection
    product_move(product_id=connected_product.pk, connection_id=own.pk)
    assert connection_demo(product_name="appraisal") == own  # make run again
    assert list(demo.products.all()) == [] and list(own.products.all()) == [connected_product]
