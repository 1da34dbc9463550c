"""Idempotent answers keep the ids of what they made, not their bodies (each carried the whole
order): the answers kept so far are cut down to those ids, so their replays keep working."""

from django.db import migrations


def made_of(body) -> dict:
    if not isinstance(body, dict):
        return {}
    if isinstance(body.get("delivery"), dict) and isinstance(body.get("order"), dict):
        return {"order": body["order"].get("id"), "delivery": body["delivery"].get("id")}
    if "deliveries" in body:  # an acknowledgement: the order
        return {"order": body.get("id")}
    if "mime_type" in body:  # an upload: the document
        return {"document": body.get("id")}
    return body


def answers_cut_to_ids(apps, schema_editor):
    IdempotentAnswer = apps.get_model("connector", "IdempotentAnswer")
    for row in IdempotentAnswer.objects.only("pk", "body").iterator():
        made = made_of(row.body)
        if made != row.body:
            IdempotentAnswer.objects.filter(pk=row.pk).update(body=made)


class Migration(migrations.Migration):
    dependencies = [("connector", "0007_order_route")]

    operations = [migrations.RunPython(answers_cut_to_ids, migrations.RunPython.noop)]
