from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("fulfillment", "0013_order_staff_notified_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="delivery",
            name="confirmed_by",
            field=models.CharField(blank=True, help_text="The processed callback event.", max_length=200),
        ),
    ]
