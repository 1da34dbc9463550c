"""`staff_account USERNAME [--email ADDRESS] [--keep-existing]`: create or update an admin login that works orders.

A staff user (not a superuser) in the `Order staff` group: view and change of the orders and of
the webhook inbox (`partner.core.staff_accounts`). The password is read from standard input (first
line), never from the command line where other users and shell histories could see it; without one
an existing login keeps its password. With --keep-existing a login that exists is not changed at all
(`make demo` creates the demo login once; a rerun resets no password and logs nobody out). The demo
password is refused with DJANGO_DEBUG off.
"""

import sys

from django.core.management.base import BaseCommand, CommandError

from partner.core.errors import ApplicationError
from partner.core.staff_accounts import ORDER_STAFF_GROUP, staff_account_set


class Command(BaseCommand):
    help = "Create or update an admin login for the staff who work orders; the password is read from standard input."
    stealth_options = ("stdin",)  # tests hand their own stream, as with createsuperuser

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", help="The login's e-mail address.")
        parser.add_argument(
            "--keep-existing",
            action="store_true",
            help="Only create the login: one that exists is left as it is (password, e-mail, sessions).",
        )

    def handle(self, *args, username, email=None, keep_existing=False, **options):
        stdin = options.get("stdin") or sys.stdin
        password = None
        if not stdin.isatty():
            password = stdin.readline().rstrip("\r\n") or None
        elif options.get("interactive", True):
            import getpass

            password = getpass.getpass("Password (empty keeps the current one): ") or None
        try:
            user, created = staff_account_set(
                username=username, password=password, email=email, keep_existing=keep_existing
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        what = "Created" if created else "Kept" if keep_existing else "Updated"
        self.stdout.write(self.style.SUCCESS(f"{what} staff login {user.get_username()} ({ORDER_STAFF_GROUP})."))
