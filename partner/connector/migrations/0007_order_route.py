"""The connection each order was routed to, recorded beside the order (`OrderRoute`).

The orders connected so far are routed to the connection they were given, as far as the database
tells: the one whose user works the order now, else the one that was sent events of it (an order a
staff member took over keeps the connection it came from). An order neither tells is routed to
none: the API no longer shows it, as it should not have (the product's current settings decided).
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def routes_of_the_orders_so_far(apps, schema_editor):
    Connection = apps.get_model("connector", "Connection")
    Event = apps.get_model("connector", "Event")
    Order = apps.get_model("fulfillment", "Order")
    OrderRoute = apps.get_model("connector", "OrderRoute")
    for connection in Connection.objects.all():
        worked = Order.objects.filter(assigned_to_id=connection.user_id, staff_worked=True).values_list("pk", flat=True)
        told = Event.objects.filter(connection=connection).values_list("order_id", flat=True).distinct()
        routed = set(OrderRoute.objects.values_list("order_id", flat=True))
        for order_id in sorted((set(worked) | set(told)) - routed):
            OrderRoute.objects.create(order_id=order_id, connection=connection)


class Migration(migrations.Migration):
    dependencies = [
        ("connector", "0006_event_position"),
        ("fulfillment", "0014_delivery_confirmed_by"),
    ]

    operations = [
        migrations.CreateModel(
            name="OrderRoute",
            fields=[
                (
                    "order",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="connector_route",
                        serialize=False,
                        to="fulfillment.order",
                    ),
                ),
                ("routed_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "connection",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="routes",
                        to="connector.connection",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["connection", "order"], name="order_route_connection")],
                "default_permissions": (),
            },
        ),
        migrations.RunPython(routes_of_the_orders_so_far, migrations.RunPython.noop),
    ]
