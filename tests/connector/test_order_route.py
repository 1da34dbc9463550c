"""An order belongs to the connection it was routed to when it arrived (`OrderRoute`): the API's
reads and answers, the admin's take-over and the events follow that record, never the product's
current settings (issue 36, Medium 5)."""

import pytest
from django.apps import apps as installed_apps

from partner.catalog.models import Product
from partner.catalog.product_cache import catalog_cache_drop
from partner.connector import answers
from partner.connector.answers import OrderNotFound
from partner.connector.models import Event, OrderRoute
from partner.connector.selectors import connection_orders
from partner.connector.services import ConnectionRefused, connection_create, order_take_over, product_move
from partner.fulfillment.staff import services as staff
from tests.helpers.connector import ApiClient, connected_order
from tests.helpers.staff_orders import staff_member

pytestmark = pytest.mark.django_db


def _fulfiller(product, key: str) -> None:
    Product.objects.filter(pk=product.pk).update(fulfiller=key)
    catalog_cache_drop()


def test_the_acknowledgement_records_the_connection(order, connection):
    assert OrderRoute.objects.get(order=order).connection == connection


def test_a_product_switched_back_to_staff_work_gives_the_system_none_of_its_new_orders(
    fake_platform, order, connection, connected_product
):
    _fulfiller(connected_product, "staff_worked")
    staff_order = connected_order(fake_platform, transaction_id="txn-staff-after", product_name="appraisal")
    assert staff_order.staff_worked and staff_order.assigned_to is None
    assert not OrderRoute.objects.filter(order=staff_order).exists()

    # the staff's order: not the system's to read, answer or take
    for attempt in (
        lambda: answers.order_of(connection=connection, order_id=staff_order.pk),
        lambda: answers.order_acknowledge(connection=connection, order_id=staff_order.pk),
        lambda: answers.status_update_post(connection=connection, order_id=staff_order.pk, text="Booked"),
    ):
        with pytest.raises(OrderNotFound):
            attempt()
    assert list(connection_orders(connection)) == [order]
    assert staff_order.deliveries.filter(kind="status_update").count() == 0
    # nor a connected order the admin's take-over page offers
    with pytest.raises(ConnectionRefused):
        order_take_over(order_id=staff_order.pk, user=staff_member("staff.ann"))

    # the order it was given stays its own: read and answered
    assert answers.order_of(connection=connection, order_id=order.pk) == order
    answers.status_update_post(connection=connection, order_id=order.pk, text="Inspection booked")


@pytest.mark.django_db(transaction=True)
def test_a_product_handed_on_gives_the_second_connection_none_of_the_firsts_orders(
    live_server, fake_platform, order, connection, connected_product, tasks_sent
):
    ann, bob = staff_member("staff.ann"), staff_member("staff.bob")
    order_take_over(order_id=order.pk, user=ann)  # worked by staff: stays with acme-amc when the product moves
    other = connection_create(name="title-desk")
    assert product_move(product_id=connected_product.pk, connection_id=other.connection.pk) == "acme-amc"

    second = ApiClient(live_server.url, other.client_id, other.client_secret)
    assert second.get("/orders").json()["results"] == []
    assert second.get(f"/orders/{order.pk}").status_code == 404
    first = ApiClient(live_server.url, connection.created.client_id, connection.created.client_secret)
    assert first.get(f"/orders/{order.pk}").status_code == 200

    # the order's next event goes to the connection it was routed to, not to the product's new one
    staff.order_release(order_id=order.pk, user=ann)
    staff.order_take(order_id=order.pk, user=bob)
    assert list(Event.objects.filter(order=order).values_list("connection__name", "type").order_by("pk"))[-1] == (
        "acme-amc",
        "order.taken_over",
    )
    assert not Event.objects.filter(connection=other.connection).exists()

    # and the product's next order is the second's
    later = connected_order(fake_platform, transaction_id="txn-after-move", product_name="appraisal")
    assert [o["id"] for o in second.get("/orders").json()["results"]] == [later.pk]


def test_the_migration_routes_the_orders_connected_so_far(fake_platform, order, connection, connected_product):
    import importlib

    migration = importlib.import_module("partner.connector.migrations.0007_order_route")
    taken = connected_order(fake_platform, transaction_id="txn-taken", product_name="appraisal")
    order_take_over(order_id=taken.pk, user=staff_member("staff.ann"))
    _fulfiller(connected_product, "staff_worked")
    never = connected_order(fake_platform, transaction_id="txn-never", product_name="appraisal")
    OrderRoute.objects.all().delete()

    migration.routes_of_the_orders_so_far(installed_apps, None)

    assert set(OrderRoute.objects.values_list("order_id", "connection__name")) == {
        (order.pk, "acme-amc"),  # worked by its user
        (taken.pk, "acme-amc"),  # taken over by staff: told of it, so it was the connection's
    }
    assert not OrderRoute.objects.filter(order=never).exists()
