"""`products_import PATH`: store the products of a saved product listing as a pull would.

For a catalog filled before the service can be reached: `make demo` imports the listing that
`sandbox_seed --listing` wrote, so our products (with their fulfillers chosen by the default rule)
are there when the web server first starts; the periodic pull then keeps them in step.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from partner.catalog.services import products_import
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Store the products of a saved listing (a JSON array of Product objects) as a pull would."

    def add_arguments(self, parser):
        parser.add_argument("path", help="the JSON file")
        parser.add_argument(
            "--overwrite-unpushed",
            action="store_true",
            help="also replace products edited here and not pushed yet (left as they are by default)",
        )

    def handle(self, *args, path, overwrite_unpushed=False, **options):
        try:
            documents = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
        except ValueError:
            raise CommandError(f"{path} is not JSON.") from None
        try:
            result = products_import(documents, keep_unpushed=not overwrite_unpushed)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(self.style.SUCCESS(f"Imported from {path}: {result}."))
