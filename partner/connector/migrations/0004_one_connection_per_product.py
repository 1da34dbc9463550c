"""One connection per product: a unique index on the products table's product.

Where two connections claimed a product, the one that got its orders keeps it (the first by name,
as `connection_of` chose); the others lose it. The index lives on the many-to-many's own table (the
admin edits the products as a plain many-to-many), hence SQL, with no state to change."""

from django.db import migrations, models


def claims_dedupe(apps, schema_editor):
    Link = apps.get_model("connector", "Connection").products.through
    kept = set()
    for pk, product_id in Link.objects.order_by("product_id", "connection__name").values_list("pk", "product_id"):
        if product_id in kept:
            Link.objects.filter(pk=pk).delete()
        kept.add(product_id)


class Migration(migrations.Migration):
    dependencies = [("connector", "0003_event_failing_since")]

    operations = [
        migrations.AlterField(
            model_name="connection",
            name="products",
            field=models.ManyToManyField(
                blank=True,
                help_text="The connected products whose orders it works (one connection per product).",
                related_name="+",
                to="catalog.product",
            ),
        ),
        migrations.RunPython(claims_dedupe, migrations.RunPython.noop),
        migrations.RunSQL(
            "CREATE UNIQUE INDEX connection_product_once ON connector_connection_products (product_id)",
            "DROP INDEX connection_product_once",
        ),
    ]
