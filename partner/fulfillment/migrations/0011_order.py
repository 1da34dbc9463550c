"""The tracker is called an order: models, their foreign keys, index names and permissions.

Renames only: every row, column value and index is kept (the indexes and the constraint that name
the renamed foreign key are dropped and made again, because Django's migration state does not
follow a renamed field into them). The permissions Django made for the old model names are renamed
too, so the groups holding them (the order staff's) keep their rights.
"""

from django.db import migrations, models

RENAMED = {  # old model name: (new model name, old verbose name, new verbose name)
    "tracker": ("order", "tracker", "order"),
    "trackerattachment": ("orderdocument", "tracker attachment", "order document"),
    "trackerstep": ("orderstep", "tracker step", "order step"),
}
ACTIONS = ("add", "change", "delete", "view")


def _permissions_rename(apps, *, forwards):
    Permission = apps.get_model("auth", "Permission")
    for old, (new, old_verbose, new_verbose) in RENAMED.items():
        if not forwards:
            old, new, old_verbose, new_verbose = new, old, new_verbose, old_verbose
        for action in ACTIONS:
            for permission in Permission.objects.filter(
                content_type__app_label="fulfillment", codename=f"{action}_{old}"
            ):
                taken = Permission.objects.filter(content_type=permission.content_type, codename=f"{action}_{new}")
                if taken.exists():  # made already (post_migrate of a run that stopped half-way)
                    continue
                permission.codename = f"{action}_{new}"
                permission.name = permission.name.replace(old_verbose, new_verbose)
                permission.save(update_fields=["codename", "name"])


def permissions_forwards(apps, schema_editor):
    _permissions_rename(apps, forwards=True)


def permissions_backwards(apps, schema_editor):
    _permissions_rename(apps, forwards=False)


DOCUMENT_HELD = models.Q(
    models.Q(("file", ""), _negated=True),
    models.Q(("upload_location", ""), _negated=True),
    models.Q(("upload_authorization", ""), _negated=True),
    _connector="OR",
)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("fulfillment", "0010_history_indexes"),
    ]

    operations = [
        # The staff's proxy of the tracker, taken off its base while the base is renamed (Django's
        # RenameModel does not follow a proxy's bases); a proxy has no table, so nothing is dropped.
        migrations.DeleteModel(name="StaffOrder"),
        migrations.RenameModel(old_name="Tracker", new_name="Order"),
        migrations.RenameModel(old_name="TrackerAttachment", new_name="OrderDocument"),
        migrations.RenameModel(old_name="TrackerStep", new_name="OrderStep"),
        # The index and the constraint that name the foreign key, made again once it is renamed.
        migrations.RemoveIndex(model_name="orderstep", name="step_detail_held"),
        migrations.RemoveIndex(model_name="orderdocument", name="attachment_document_held"),
        migrations.RemoveConstraint(model_name="orderdocument", name="attachment_position_unique"),
        migrations.RenameField(model_name="delivery", old_name="tracker", new_name="order"),
        migrations.RenameField(model_name="orderstep", old_name="tracker", new_name="order"),
        migrations.RenameField(model_name="orderdocument", old_name="tracker", new_name="order"),
        migrations.AlterModelOptions(
            name="delivery",
            options={"ordering": ["order", "created_at", "id"], "verbose_name_plural": "deliveries"},
        ),
        migrations.AlterModelOptions(name="orderstep", options={"ordering": ["order", "created_at", "id"]}),
        migrations.AlterModelOptions(name="orderdocument", options={"ordering": ["order", "position"]}),
        migrations.AddIndex(
            model_name="orderstep",
            index=models.Index(
                condition=models.Q(("detail", ""), _negated=True), fields=["id", "order"], name="step_detail_held"
            ),
        ),
        migrations.AddIndex(
            model_name="orderdocument",
            index=models.Index(condition=DOCUMENT_HELD, fields=["id", "order"], name="attachment_document_held"),
        ),
        migrations.AddConstraint(
            model_name="orderdocument",
            constraint=models.UniqueConstraint(fields=("order", "position"), name="attachment_position_unique"),
        ),
        migrations.RenameIndex(model_name="order", new_name="order_status_updated", old_name="tracker_status_updated"),
        migrations.RenameIndex(model_name="order", new_name="order_held", old_name="tracker_held"),
        migrations.RenameIndex(model_name="order", new_name="order_open", old_name="tracker_open"),
        migrations.RenameIndex(
            model_name="order", new_name="order_status_completed", old_name="tracker_status_completed"
        ),
        migrations.RenameIndex(model_name="order", new_name="order_status_failed", old_name="tracker_status_failed"),
        migrations.CreateModel(
            name="StaffOrder",
            fields=[],
            options={
                "verbose_name": "order to work",
                "verbose_name_plural": "orders to work",
                "proxy": True,
                "indexes": [],
                "constraints": [],
            },
            bases=("fulfillment.order",),
        ),
        migrations.RunPython(permissions_forwards, permissions_backwards),
    ]
