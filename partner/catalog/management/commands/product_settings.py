"""`product_settings NAME [--turnaround-hours N] [--staff-email ADDRESS]`: our own settings of a product.

The turnaround we promise and where staff are told of the product's orders: local fields, never
pushed to the service and kept by every pull (the admin sets them too). `make demo` sets the demo
appraisal's.
"""

from django.core.management.base import BaseCommand, CommandError

from partner.catalog.services import product_staff_settings_set
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Set a product's turnaround (hours) and staff e-mail address."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the product's name")
        parser.add_argument("--turnaround-hours", type=int, default=None, help="0 clears it")
        parser.add_argument("--staff-email", default=None, help='"" clears it')

    def handle(self, *args, name, turnaround_hours=None, staff_email=None, **options):
        try:
            product = product_staff_settings_set(name=name, turnaround_hours=turnaround_hours, staff_email=staff_email)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        turnaround = f"{product.turnaround_hours} h" if product.turnaround_hours else "none"
        self.stdout.write(
            self.style.SUCCESS(
                f"Product {product.name}: turnaround {turnaround}, staff e-mail {product.staff_email or 'none'}."
            )
        )
