"""`connection_create NAME [--endpoint URL] [--product NAME]... [--notify-email ADDRESS]`: a new connection.

What the admin's "Add connection" does, for a setup that is scripted: the connection, its OAuth
client and its first signing secret, the products it works (each already `connected`:
`product_settings NAME --fulfiller connected`). The credentials are printed once, as the lines of
an environment file for the partner's system (`CLIENT_ID=…`); only their hashes or ciphertexts are
kept, so they are never shown again. Without --endpoint the system pulls the events feed.
"""

from django.core.management.base import BaseCommand, CommandError

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.selectors import product_get
from partner.connector import services
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Create a connection for a partner's order system; its credentials are printed once."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--endpoint", default="", help="https URL the events are pushed to")
        parser.add_argument("--product", action="append", default=[], help="a connected product it works")
        parser.add_argument("--notify-email", default="", help="who is told when its endpoint keeps failing")

    def handle(self, *args, name, endpoint, product, notify_email, **options):
        products = [product_get(name=each) for each in product]
        for each, found in zip(product, products, strict=True):
            if found is None or found.fulfiller != CONNECTED:
                raise CommandError(f"No connected product {each!r}: product_settings {each} --fulfiller {CONNECTED}")
        try:
            created = services.connection_create(
                name=name, endpoint_url=endpoint, products=products, notify_email=notify_email
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"CLIENT_ID={created.client_id}\nCLIENT_SECRET={created.client_secret}")
        self.stdout.write(f"SIGNING_SECRET={created.signing_secret}")
