"""Shared body of `allow_instance` and `deny_instance` (a merge patch of the access entitlements)."""

from django.core.management.base import BaseCommand, CommandError

from partner.catalog import services
from partner.core.errors import ApplicationError
from partner.platform import urns


class AccessCommand(BaseCommand):
    mode = "allow"

    def add_arguments(self, parser):
        parser.add_argument("product", help="Product name (or service id).")
        parser.add_argument("instance", help=f"Lender instance URN, e.g. {urns.instance_urn('<instance id>')}.")

    def handle(self, *args, product, instance, **options):
        try:
            item = services.product_ensure(name=product, service_id=product)
            if self.mode == "allow":
                services.product_access_patch(item, allow_add=[instance])
            else:
                services.product_access_patch(item, deny_add=[instance])
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        verb = "allowed" if self.mode == "allow" else "denied"
        self.stdout.write(self.style.SUCCESS(f"{instance} {verb} for {item.name}."))
