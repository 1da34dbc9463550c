"""When staff were e-mailed of a new order: marked only once sent. Orders already acknowledged
were told by the on-commit e-mail of before (or never will be): marked as told, so the periodic
pass does not e-mail staff of every old order at once."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('fulfillment', '0012_every_response_a_delivery'),
    ]

    operations = [
        migrations.AddField(
            model_name='order',
            name='staff_notified_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(
            "UPDATE fulfillment_order SET staff_notified_at = updated_at WHERE staff_worked AND status <> 'VALIDATION_REQUESTED' AND status <> 'IN_PROGRESS'",
            migrations.RunSQL.noop,
        ),
    ]
