"""`order_show TRANSACTION...`: where orders stand, one JSON object per line.

Each order's status, failure code and deliveries (kind, state, and the response version each made)
by its transaction id, for an operator asking what became of an order, and for the schedule drill
(bench/drills/schedule.py), which reads the final state of its orders so. A transaction with no
order is left out. No borrower's data, no texts.
"""

import json

from django.core.management.base import BaseCommand

from partner.fulfillment.orders.selectors import orders_shown


class Command(BaseCommand):
    help = "Show orders' status, failure code and deliveries by transaction id, one JSON line each."

    def add_arguments(self, parser):
        parser.add_argument("transaction_ids", nargs="+", metavar="TRANSACTION")

    def handle(self, *args, transaction_ids, **options):
        for transaction_id, order in orders_shown(transaction_ids).items():
            self.stdout.write(json.dumps({"transaction_id": transaction_id, **order}))
