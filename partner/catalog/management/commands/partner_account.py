"""`partner_account USERNAME [--company NAME]`: create or update a partner account.

The password is read from standard input (first line), never from the command
line where other users and shell histories could see it. Without a password on
standard input an existing account keeps its password.
"""

import sys

from django.core.management.base import BaseCommand, CommandError

from partner.catalog.services import partner_account_set
from partner.core.errors import ApplicationError


class Command(BaseCommand):
    help = "Create or update a partner account; the password is read from standard input."
    stealth_options = ("stdin",)  # tests hand their own stream, as with createsuperuser

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--company", help="Company name (created when new, with that name as its code).")
        state = parser.add_mutually_exclusive_group()
        state.add_argument("--active", dest="active", action="store_true", default=None)
        state.add_argument("--inactive", dest="active", action="store_false")

    def handle(self, *args, username, company=None, active=None, **options):
        stdin = options.get("stdin") or sys.stdin
        password = None
        if not stdin.isatty():
            line = stdin.readline()
            password = line.rstrip("\r\n") or None
        elif options.get("interactive", True):
            import getpass

            password = getpass.getpass("Password (empty keeps the current one): ") or None
        try:
            account, created = partner_account_set(username=username, password=password, company=company, active=active)
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        what = "Created" if created else "Updated"
        company_text = f" in company {account.company.name}" if account.company else ""
        self.stdout.write(self.style.SUCCESS(f"{what} partner account {account.username}{company_text}."))
