"""Reconciliation cost: calls to the service per run with 10,000 finished transactions in the sandbox.

Every run of the reconciliation once listed every page of the service's transactions (#7, 50 a
page): 10,000 finished transactions cost 200 calls every RECONCILE_INTERVAL, for ever. Now the
full pass does that at most once per RECONCILE_FULL_INTERVAL, and the other runs are the cheap
pass (partner/fulfillment/recovery/reconciliation.py). This script counts the calls of each, with 0 and
with --new new transactions (whose webhooks never came), and prints them with their ratio.

Its own world, in this process: a database of its own (a SQLite file under var/bench-reconcile/,
or with --pg the PostgreSQL database `bench_reconcile` on BENCH_PG_URL, each made anew and
migrated), the application with its sandbox served by a thread on a free port (bench/inprocess.py), an in-memory
broker and cache (the orders it opens are never worked). Calls are counted with the client's
`service_call_finished` signal (the token request apart). Each run's `seconds` is informative only:
the emulator sorts and counts its whole table for each page. Writes bench/results/reconcile_cost.json.

    .venv/bin/python bench/reconcile_cost.py                 # 10,000 finished, 5 new; about 40 s
    .venv/bin/python bench/reconcile_cost.py --finished 100000 --pg
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import stack  # noqa: E402
from bench.inprocess import django_setup, server_start  # noqa: E402

DB_DIR = stack.ROOT / "var" / "bench-reconcile"
PG_DB_NAME = "bench_reconcile"


def finished_seed(seed, count: int) -> None:
    """`count` finished transactions of the demo product, appended to the sandbox's list."""
    from partner.sandbox.models import Transaction

    product, user, loan = seed.products["address-verification"], seed.users["lender.demo"], seed.loans[0]
    Transaction.objects.bulk_create(
        (
            Transaction(product=product, user=user, loan=loan, status="completed", request={"type": "NEW_REQUEST"})
            for _ in range(count)
        ),
        batch_size=1000,
    )


class Calls:
    """The calls to the service's transaction list (#7) and to the service in all, while counting."""

    def __init__(self):
        from partner.platform.signals import service_call_finished

        self.all = self.listing = 0
        service_call_finished.connect(self._seen, weak=False)

    def _seen(self, sender, **kwargs):
        self.all += 1
        self.listing += urlsplit(kwargs["url"]).path.endswith("/partner/v2/transactions")

    def run(self, *, full: bool) -> dict:
        """One reconciliation: its calls, the orders it opened, its wall time."""
        from partner.fulfillment.recovery.reconciliation import transactions_reconcile

        self.all = self.listing = 0
        started = time.perf_counter()
        opened = transactions_reconcile(full=full)
        return {
            "service_calls": self.all,
            "list_calls": self.listing,
            "orders_opened": opened,
            "seconds": round(time.perf_counter() - started, 2),
        }


def reconcile_cost_bench(*, finished: int, new: int, database_url: str) -> dict:
    port = stack.free_port()
    base_url = f"http://127.0.0.1:{port}"
    django_setup(database_url=database_url, base_url=base_url)
    from django.conf import settings
    from django.core.management import call_command

    from partner.sandbox.seeding import sandbox_seed
    from partner.sandbox.transactions import transaction_create

    call_command("migrate", verbosity=0, interactive=False)
    server = server_start(port)
    try:
        seed = sandbox_seed(public_base_url=base_url)
        began = time.perf_counter()
        finished_seed(seed, finished)
        seeded_s = time.perf_counter() - began
        calls = Calls()
        runs = {
            # What every run did before; also the first run here (its token request is not counted).
            "every_page_0_new": calls.run(full=True),
            "cheap_pass_0_new": calls.run(full=False),
        }
        for _ in range(new):
            transaction_create(
                product=seed.products["address-verification"],
                user=seed.users["lender.demo"],
                loan=seed.loans[0],
                send_webhook=False,
            )
        runs[f"cheap_pass_{new}_new"] = calls.run(full=False)
        runs[f"every_page_{new}_new"] = calls.run(full=True)
    finally:
        server.shutdown()
        server.server_close()

    old, cheap = runs["every_page_0_new"]["service_calls"], runs[f"cheap_pass_{new}_new"]["service_calls"]
    per_day = 86400 // settings.RECONCILE_INTERVAL
    full_per_day = max(1, 86400 // max(1, settings.RECONCILE_FULL_INTERVAL))
    return {
        "finished_transactions": finished,
        "new_transactions": new,
        "page_size": 50,
        "seed_seconds": round(seeded_s, 2),
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "runs": runs,
        "calls_per_run_before": old,
        "calls_per_run_after": cheap,
        "ratio_before_to_after": round(old / max(1, cheap), 1),
        "calls_per_day_before": old * per_day,
        "calls_per_day_after": cheap * per_day + old * full_per_day,  # the due run: its cheap pass, then all
        "reconcile_interval_s": settings.RECONCILE_INTERVAL,
        "reconcile_full_interval_s": settings.RECONCILE_FULL_INTERVAL,
    }


def reconcile_cost_process(*, finished: int = 10000, new: int = 5) -> dict:
    """`bench/run.py`: this script in a process of its own (its Django set-up is its own), on PostgreSQL;
    its figures."""
    command = [stack.PYTHON, __file__, "--pg", "--finished", str(finished), "--new", str(new)]
    subprocess.run(command, cwd=stack.ROOT, check=True, stdout=subprocess.DEVNULL)
    return json.loads((stack.RESULTS / "reconcile_cost.json").read_text())


def show(data: dict, indent: int = 0) -> None:
    for key, value in data.items():
        if isinstance(value, dict):
            print(f"{'  ' * indent}  {key}:")
            show(value, indent + 1)
        else:
            print(f"{'  ' * indent}  {key}: {value}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Calls to the service per reconciliation run")
    parser.add_argument("--finished", type=int, default=10000, help="finished transactions in the sandbox")
    parser.add_argument("--new", type=int, default=5, help="new transactions (webhook lost) for the second runs")
    parser.add_argument("--pg", action="store_true", help=f"PostgreSQL database {PG_DB_NAME} instead of SQLite")
    args = parser.parse_args(argv)
    if args.pg:
        database_url = stack.database_recreate(PG_DB_NAME)
    else:
        DB_DIR.mkdir(parents=True, exist_ok=True)
        for leftover in DB_DIR.glob("db.sqlite3*"):
            leftover.unlink()
        database_url = f"sqlite:///{DB_DIR / 'db.sqlite3'}"
    result = reconcile_cost_bench(finished=args.finished, new=args.new, database_url=database_url)
    print(f"== reconciliation: calls to the service per run, {args.finished:,} finished transactions")
    show(result)
    print(
        f"  => {result['calls_per_run_before']} calls per run before, {result['calls_per_run_after']} after "
        f"({result['ratio_before_to_after']}x fewer); per day {result['calls_per_day_before']:,} -> "
        f"{result['calls_per_day_after']:,}"
    )
    stack.RESULTS.mkdir(parents=True, exist_ok=True)
    path = stack.RESULTS / "reconcile_cost.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
