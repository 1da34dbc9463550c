from django.db import migrations, models


def positions_of_the_events_so_far(apps, schema_editor):
    """The events made so far keep their id as their position, so a cursor a system holds stays valid."""
    Event = apps.get_model("connector", "Event")
    Event.objects.update(position=models.F("id"))


class Migration(migrations.Migration):
    dependencies = [
        ("connector", "0005_permissions_rotate_take_over"),
    ]

    operations = [
        migrations.AddField(
            model_name="event",
            name="position",
            field=models.PositiveBigIntegerField(blank=True, editable=False, null=True, unique=True),
        ),
        migrations.RunPython(positions_of_the_events_so_far, migrations.RunPython.noop),
        migrations.RemoveIndex(model_name="event", name="event_feed"),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(fields=["connection", "position"], name="event_feed_position"),
        ),
        migrations.AddIndex(
            model_name="event",
            index=models.Index(
                condition=models.Q(("position__isnull", True)), fields=["connection", "id"], name="event_unstamped"
            ),
        ),
    ]
