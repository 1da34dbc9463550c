"""SQL statements and Celery tasks of one automated order, from its `created` webhook to its completion.

Counted here, in a process of its own (`bench/run.py` starts it; its Django set-up is its own):
a PostgreSQL database of the bench's (`<BENCH_DB_NAME>_statements`, made anew and migrated), the
application with its sandbox served by threads of this process (bench/inprocess.py), Celery on an
in-memory broker with no worker and `task_always_eager` off, so a task is published and not run:
each publication is recorded (Celery's `before_task_publish` signal).

An order is driven step by step, as production runs it: the sandbox creates a transaction and
records its `created` webhook (its own sender cannot reach us: the product's subscription points
at a closed port), this process receives those exact bytes (the intake), relays them (the relay),
and processes the notification (the worker's task: the order opened and run, with its calls to the
sandbox over HTTP); the sandbox records the `processed` event's webhook, which goes through the
same three steps (the callback completes the order). Each step's statements on this process's
connection are counted with Django's `CaptureQueriesContext`; the sandbox's own statements are on
its server threads' connections and are not. Transaction control (BEGIN, COMMIT, SAVEPOINT,
RELEASE) is counted apart. The first order warms the process (signing secrets, the catalog
cache, the token, the credential check); the figures are the second order's.

    .venv/bin/python bench/run.py --only statements
"""

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import stack  # noqa: E402

# The application's entry points this benchmark drives, in one place: when a module moves, only
# this table changes. Each is "module:attribute", imported once Django is set up.
ENTRY_POINTS = {
    # the order's steps
    "webhook_receive": "partner.inbox.intake:webhook_receive",
    "notifications_relay": "partner.inbox.outbox:notifications_relay",
    "notification_process": "partner.inbox.dispatch:notification_process",
    # the order as we keep it, to check it completed
    "Order": "partner.fulfillment.models:Order",
    "ORDER_COMPLETED": "partner.fulfillment.models:OrderStatus.REQUEST_COMPLETED",
    # the world: our catalog and account, the sandbox's demo data and transactions
    "partner_account_set": "partner.catalog.services:partner_account_set",
    "products_pull": "partner.catalog.services:products_pull",
    "sandbox_seed": "partner.sandbox.seeding:sandbox_seed",
    "transaction_create": "partner.sandbox.transactions:transaction_create",
    "WebhookDelivery": "partner.sandbox.models:WebhookDelivery",
    "signature_compute": "partner.platform.signatures:signature_compute",
}

# Issue 16's figure before its work on statements (39 per order); the target is half of it.
BEFORE = 39
CONTROL = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")
CLOSED_PORT = "http://127.0.0.1:9"


class EntryPoints:
    """ENTRY_POINTS resolved: `entry.webhook_receive(...)`."""

    def __init__(self, table: dict[str, str]):
        for name, where in table.items():
            module, _, path = where.partition(":")
            value = importlib.import_module(module)
            for part in path.split("."):
                value = getattr(value, part)
            setattr(self, name, value)


def statements_bench() -> dict:
    """`bench/run.py`: this module in a process of its own; its figures (each step's SQL in
    bench/results/statements_sql.json)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as output:
        command = [stack.PYTHON, __file__, "--output", output.name]
        subprocess.run(command, cwd=stack.ROOT, check=True)
        result = json.loads(Path(output.name).read_text())
    stack.RESULTS.mkdir(parents=True, exist_ok=True)
    (stack.RESULTS / "statements_sql.json").write_text(json.dumps(result.pop("sql"), indent=2))
    return result


def _count(name: str, counts: dict, action):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        result = action()
    sql = [query["sql"] for query in captured.captured_queries]
    work = [text for text in sql if not text.upper().startswith(CONTROL)]
    counts["statements"][name] = len(work)
    counts["transaction_control"][name] = len(sql) - len(work)
    counts["sql"][name] = work
    return result


def _order(entry: EntryPoints, seed, number: int) -> dict:
    """One automated order, webhook to completion; its counts by step and the tasks it published."""
    from celery.signals import before_task_publish
    from django.conf import settings

    counts = {"statements": {}, "transaction_control": {}, "sql": {}}
    tasks = []

    def published(sender=None, **kwargs):
        tasks.append(sender)

    def webhook_bytes(after: int, resource_id: str) -> tuple[bytes, str]:
        delivery = entry.WebhookDelivery.objects.filter(pk__gt=after, resource_id=resource_id).latest("pk")
        body = bytes(delivery.body)
        return body, entry.signature_compute(body, settings.SVC_SIGNING_SECRETS[0])

    def receive(body: bytes, signature: str) -> int:
        return entry.webhook_receive(body=body, signature=signature, headers={}, remote_addr="127.0.0.1")

    before_task_publish.connect(published, weak=False)
    try:
        last = entry.WebhookDelivery.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        transaction = entry.transaction_create(
            product=seed.products["address-verification"], user=seed.users["lender.demo"], loan=seed.loans[number]
        )
        body, signature = webhook_bytes(last, transaction.id)
        created = _count("intake (created)", counts, lambda: receive(body, signature))
        _count("relay (created)", counts, entry.notifications_relay)
        last = entry.WebhookDelivery.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        _count("process (created)", counts, lambda: entry.notification_process(notification_id=created))
        event = entry.WebhookDelivery.objects.filter(pk__gt=last).latest("pk")
        body, signature = webhook_bytes(last, event.resource_id)
        processed = _count("intake (processed)", counts, lambda: receive(body, signature))
        _count("relay (processed)", counts, entry.notifications_relay)
        _count("process (processed)", counts, lambda: entry.notification_process(notification_id=processed))
    finally:
        before_task_publish.disconnect(published)
    order = entry.Order.objects.get(transaction_id=transaction.id)
    if order.status != entry.ORDER_COMPLETED:
        raise RuntimeError(f"order {order.pk} ended {order.status}, not completed: {order.last_error}")
    counts["tasks"] = sorted(tasks)
    return counts


def _run() -> dict:
    from bench.inprocess import django_setup, server_start

    database = stack.database_recreate(f"{stack.DB_NAME}_statements")
    port = stack.free_port()
    base = f"http://127.0.0.1:{port}"
    django_setup(database_url=database, base_url=base, SANDBOX_WEBHOOK_MAX_ATTEMPTS="1")
    from django.core.cache import cache
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    entry = EntryPoints(ENTRY_POINTS)
    server = server_start(port)
    try:
        seed = entry.sandbox_seed(public_base_url=CLOSED_PORT)  # its webhook sender reaches nobody
        entry.partner_account_set(username="lender.demo", password="demo-password-1", company="DEMO01")
        entry.products_pull()
        # The pull's commit leaves a short "changed" mark on the catalog's cache key; a running
        # system's orders come long after it, so they find the catalog cached: start from that.
        cache.clear()
        _order(entry, seed, 0)  # warms the process
        counts = _order(entry, seed, 1)
    finally:
        server.shutdown()
        server.server_close()
    statements = counts["statements"]
    return {
        "database": "postgresql",
        "statements": statements,
        "total": sum(statements.values()),
        "before": BEFORE,
        "transaction_control": sum(counts["transaction_control"].values()),
        "tasks_per_order": len(counts["tasks"]),
        "tasks": counts["tasks"],
        "sql": counts["sql"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, help="where to write the figures (JSON); else printed")
    args = parser.parse_args(argv)
    result = _run()
    text = json.dumps(result, indent=2)
    if args.output:
        args.output.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
