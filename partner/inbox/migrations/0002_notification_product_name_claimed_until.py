from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("inbox", "0001_initial"),
    ]

    operations = [
        # meta.instanceId holds the product's name: the field is named for what it holds.
        migrations.RenameField(model_name="notification", old_name="instance_id", new_name="product_name"),
        migrations.AlterField(
            model_name="notification",
            name="product_name",
            field=models.CharField(
                blank=True,
                help_text="The product's name, which the service sends as meta.instanceId.",
                max_length=200,
            ),
        ),
        # A worker holds a notification with a lease, as it holds a tracker (partner/core/leases.py).
        migrations.AddField(
            model_name="notification",
            name="claimed_until",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
