"""Permissions of their own for rotating a connection's signing secrets and for taking a connected
order over by hand (the admin's actions checked only the view permission before)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("connector", "0004_one_connection_per_product")]

    operations = [
        migrations.AlterModelOptions(
            name="connection",
            options={
                "ordering": ["name"],
                "permissions": [("rotate_connection_secrets", "Can add and drop a connection's signing secrets")],
            },
        ),
        migrations.AlterModelOptions(
            name="connectedorder",
            options={
                "permissions": [("take_over_connectedorder", "Can take a connected order over by hand")],
                "verbose_name": "connected order",
                "verbose_name_plural": "connected orders",
            },
        ),
    ]
