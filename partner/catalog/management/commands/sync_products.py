"""Keep products in step with the service from scripts and CI: `--pull` every page, or `--push` ours."""

from django.core.management.base import BaseCommand, CommandError

from partner.catalog import services
from partner.catalog.models import Product
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Pull every product from the service (#8), or push ours (PUT #9) pointed at PUBLIC_BASE_URL."

    def add_arguments(self, parser):
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--pull", action="store_true", help="Read every page of the listing and store it.")
        mode.add_argument("--push", action="store_true", help="Replace the service's products with ours.")
        parser.add_argument(
            "--product",
            action="append",
            default=[],
            metavar="NAME",
            help="With --push: only this product (repeatable).",
        )
        parser.add_argument("--diff", action="store_true", help="With --push: show the differences, push nothing.")

    def handle(self, *args, pull=False, push=False, product=(), diff=False, **options):
        try:
            if pull:
                result = services.products_pull()
                self.stdout.write(self.style.SUCCESS(f"Pulled from the service: {result}."))
                return
            products = list(Product.objects.order_by("name"))
            if product:
                products = [p for p in products if p.name in product]
                missing = sorted(set(product) - {p.name for p in products})
                if missing:
                    raise CommandError(f"Unknown product(s): {', '.join(missing)}")
            failures = 0
            for item in products:
                if diff:
                    self._diff(item)
                    continue
                try:
                    services.product_push(item)
                except ApplicationError as exc:
                    failures += 1
                    self.stderr.write(self.style.ERROR(exc.message))
                else:
                    self.stdout.write(self.style.SUCCESS(f"Pushed {item.name}."))
            if failures:
                raise CommandError(f"{failures} product(s) could not be pushed.")
        except ApplicationError as exc:
            raise CommandError(exc.message) from None

    def _diff(self, product):
        result = services.product_diff(product)
        if not result.found:
            self.stdout.write(f"{product.name}: not listed by the service.")
        elif not result.lines:
            self.stdout.write(f"{product.name}: no difference.")
        else:
            self.stdout.write(f"{product.name}:")
            for line in result.lines:
                self.stdout.write(f"  {line.path}: ours={line.ours!r} service={line.theirs!r}")
