"""`connection_demo [PRODUCT]`: the local demo's connected product and its order system's connection.

`make demo` runs it for the demo appraisal: its orders go to the example order system
(examples/order_system/, on 127.0.0.1:8001) with public demo credentials, refused with DJANGO_DEBUG
off. Staff can still take any of them over by hand in the admin.
"""

from django.core.management.base import BaseCommand, CommandError

from partner.connector import services
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Make a product connected to the demo order system (local runs only)."

    def add_arguments(self, parser):
        parser.add_argument("product", nargs="?", default="appraisal", help="the product's name")

    def handle(self, *args, product, **options):
        try:
            connection = services.connection_demo(product_name=product)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(f"Product {product}: connected to {connection.name} at {connection.endpoint_url}.")
        )
