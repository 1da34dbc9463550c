"""`product_settings NAME [--turnaround-hours N] [--staff-email ADDRESS] [--fulfiller KEY]`: a product's own settings.

The turnaround we promise, where staff are told of the product's orders and which of our fulfillers
works it (`staff_worked`, `connected`, …): local fields, never pushed to the service and kept by
every pull (the admin sets them too). `make demo` sets the demo appraisal's.
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from partner.catalog.services import product_fulfiller_set, product_staff_settings_set
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Set a product's turnaround (hours), staff e-mail address and fulfiller."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the product's name")
        parser.add_argument("--turnaround-hours", type=int, default=None, help="0 clears it")
        parser.add_argument("--staff-email", default=None, help='"" clears it')
        parser.add_argument("--fulfiller", default=None, help="the key of the fulfiller that works it")

    def handle(self, *args, name, turnaround_hours=None, staff_email=None, fulfiller=None, **options):
        try:
            with transaction.atomic():  # all or nothing
                if fulfiller is not None:
                    product_fulfiller_set(name=name, fulfiller=fulfiller)
                product = product_staff_settings_set(
                    name=name, turnaround_hours=turnaround_hours, staff_email=staff_email
                )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        turnaround = f"{product.turnaround_hours} h" if product.turnaround_hours else "none"
        self.stdout.write(
            self.style.SUCCESS(
                f"Product {product.name}: turnaround {turnaround}, staff e-mail {product.staff_email or 'none'}, "
                f"fulfiller {product.fulfiller}."
            )
        )
