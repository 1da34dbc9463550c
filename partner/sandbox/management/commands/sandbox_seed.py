"""`python manage.py sandbox_seed [--listing PATH]`: the sandbox's demo data (idempotent).

`--listing` also writes the demo products as the service's product listing (#8) shows them, a
JSON array, for `manage.py products_import`: `make demo` fills our catalog from it before the web
server (and with it the sandbox's API) is up. The sandbox imports no app of ours, so it does not
write our catalog itself.
"""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.selectors import product_document


class Command(BaseCommand):
    help = "Create or update the sandbox demo data (lender instance, users, loans, products)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--public-base-url",
            default=None,
            help="where the products' webhooks and interface point (default PUBLIC_BASE_URL)",
        )
        parser.add_argument("--reset", action="store_true", help="restore the demo products whole")
        parser.add_argument(
            "--listing",
            metavar="PATH",
            default=None,
            help="also write the demo products, as the product listing shows them, to this JSON file",
        )

    def handle(self, *args, public_base_url=None, reset=False, listing=None, **options):
        base = public_base_url or settings.PUBLIC_BASE_URL
        seed = sandbox_seed(public_base_url=base, reset=reset)
        self.stdout.write(
            f"sandbox: instance {seed.instance.instance_id}, users {', '.join(seed.users)}, "
            f"{len(seed.loans)} loans, products {', '.join(seed.products)}; webhooks to {base}/v1/webhooks"
        )
        if listing:
            path = Path(listing)
            path.parent.mkdir(parents=True, exist_ok=True)
            documents = [product_document(product) for product in seed.products.values()]
            path.write_text(json.dumps(documents, indent=2) + "\n", encoding="utf-8")
            self.stdout.write(f"sandbox: the product listing written to {path}")
