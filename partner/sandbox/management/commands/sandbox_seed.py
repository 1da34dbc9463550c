"""`python manage.py sandbox_seed`: the sandbox's demo data (idempotent)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from partner.sandbox.seeding import sandbox_seed


class Command(BaseCommand):
    help = "Create or update the sandbox demo data (lender instance, users, loans, products)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--public-base-url",
            default=None,
            help="where the products' webhooks and interface point (default PUBLIC_BASE_URL)",
        )
        parser.add_argument("--reset", action="store_true", help="restore the demo products whole")

    def handle(self, *args, public_base_url=None, reset=False, **options):
        base = public_base_url or settings.PUBLIC_BASE_URL
        seed = sandbox_seed(public_base_url=base, reset=reset)
        self.stdout.write(
            f"sandbox: instance {seed.instance.instance_id}, users {', '.join(seed.users)}, "
            f"{len(seed.loans)} loans, products {', '.join(seed.products)}; webhooks to {base}/v1/webhooks"
        )
