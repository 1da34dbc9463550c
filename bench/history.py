"""Flat with history: what intake, the relay, every periodic job and one order cost with a year of history.

Two databases of the bench's own, migrated alike: `<name>_hist_empty` and `<name>_hist_seeded`, the
second given 1,000,000 notifications and 100,000 orders with their steps, reports and deliveries
(`bench/history_seed.py`, set-based SQL, then VACUUM ANALYZE); both hold the same work in flight
(the 60 open orders and their notifications), so they differ by the history alone. Each has its own gunicorn (the
intake as in production, sandbox off, 4 workers). Then, in `rounds` rounds, each database in turn
(empty, seeded, empty, seeded, ...; the machine's noise falls on both alike):

- intake: `webhooks` distinct signed webhooks through its gunicorn (bench/load.py, 16
  connections, after a warm-up in the first round): gunicorn CPU and PostgreSQL CPU (the
  database's backends) per webhook;
- a child process (`bench/history_probe.py`) relays what the intake stored, runs every periodic
  job `reps` times and `orders` automated orders end to end (against a fake of the service),
  measuring its own CPU and its backend's.

Each figure is the median over the rounds; `ratio` is seeded / empty of the CPU (the process's
plus PostgreSQL's), and `flat` says it is within 10 % (target 5 of issue 16). In the last round the
seeded database's probe also EXPLAINs (ANALYZE) every statement of every periodic job
(`bench/history_plans.py`): `plans` lists each with its top line, its scans and a verdict, and
`seq_scans_on_history` the findings. The databases are dropped at the end unless `keep`. With
`candidate_indexes`, the indexes this bench recommends (`bench/history_indexes.py`) are created in
both databases first, as a migration would: the same run, with them.

    .venv/bin/python bench/history.py                      # 1,000,000 / 100,000; about 6 minutes
    .venv/bin/python bench/history.py --notifications 100000 --orders 10000 --rounds 2 --keep
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pg_cost, stack  # noqa: E402

FLAT = 1.10  # seeded / empty, at most
LABELS = ("empty", "seeded")


def _intake(web: stack.Process, database: str, *, webhooks: int, tag: str, warm: bool) -> dict:
    from bench.intake import load_run, notifications_build, summarize

    if warm:
        load_run(web.port, notifications_build(500, tag=f"{tag}-warm"), concurrency=16)
    items = notifications_build(webhooks, tag=tag)
    web_before, pg_before = pg_cost.pids_cpu_ns(web.pids()), pg_cost.backends_cpu_ns(database)
    summary = summarize(load_run(web.port, items, concurrency=16))
    web_ns = pg_cost.pids_cpu_ns(web.pids()) - web_before
    pg_ns = pg_cost.cpu_spent(pg_before, pg_cost.backends_cpu_ns(database))
    accepted = summary["accepted"]
    return {
        "webhooks": webhooks,
        "accepted": accepted,
        "accepted_per_s": summary["accepted_per_s"],
        "p99_ms": summary["p99_ms"],
        "cpu_ms": pg_cost.per(web_ns, accepted),
        "pg_cpu_ms": pg_cost.per(pg_ns, accepted),
    }


def _probe(database: str, *, reps: int, orders: int, explain: bool) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "probe.json"
        argv = [stack.PYTHON, "-m", "bench.history_probe", "--database", database, "--output", str(output)]
        argv += ["--reps", str(reps), "--orders", str(orders)] + (["--explain"] if explain else [])
        subprocess.run(argv, cwd=stack.ROOT, check=True)
        return json.loads(output.read_text())


def _costs(samples: dict[str, list[dict]]) -> dict:
    """Per measured thing: the median of each figure over the rounds, empty and seeded, and the ratio.

    `samples[label]` holds, per round, {thing: {cpu_ms, pg_cpu_ms, ...}}.
    """
    costs = {}
    for thing in samples["empty"][0]:
        row = {}
        for label in LABELS:
            rounds = [each[thing] for each in samples[label]]
            row[label] = {
                key: round(statistics.median(r[key] for r in rounds), 3)
                for key in ("cpu_ms", "pg_cpu_ms", "statements")
                if key in rounds[0]
            }
            totals = [r["cpu_ms"] + r["pg_cpu_ms"] for r in rounds]
            row[label]["total_cpu_ms"] = round(statistics.median(totals), 3)
            row[label]["total_cpu_ms_by_round"] = [round(total, 3) for total in totals]
        empty, seeded = row["empty"]["total_cpu_ms"], row["seeded"]["total_cpu_ms"]
        row["ratio"] = round(seeded / empty, 2) if empty else None
        row["flat"] = row["ratio"] is not None and row["ratio"] <= FLAT
        costs[thing] = row
    return costs


def _round_figures(intake: dict, probe: dict) -> dict:
    """One round of one database, as {thing: figures}: the unit of each thing in its name."""
    figures = {"intake, per webhook (gunicorn + PostgreSQL)": intake}
    figures["relay, per notification"] = probe["relay"]
    for name, job in probe["jobs"].items():
        figures[f"{name}, per run"] = job
    figures["automated order, webhook to completion (fake service), per order"] = probe["orders"]
    return figures


def history_bench(
    *,
    database: str,
    notifications: int = 1_000_000,
    orders: int = 100_000,
    rounds: int = 3,
    webhooks: int = 3000,
    reps: int = 20,
    order_runs: int = 20,
    web_workers: int = 4,
    keep: bool = False,
    candidate_indexes: bool = False,
) -> dict:
    """Costs empty vs seeded and the periodic queries' plans; prints nothing.

    Long because it is one measurement: both databases are made, seeded and served, measured turn
    about in the same rounds, and dropped, whatever fails on the way.

    `database` names the bench's database (a URL); this bench makes `<name>_hist_empty` and
    `<name>_hist_seeded` beside it on the same server (dropped at the end unless `keep`).
    Returns {"seed", "rounds", "costs": {thing: {empty, seeded, ratio, flat}}, "not_flat",
    "plans", "seq_scans_on_history", "intake_rounds"}.
    """
    from bench.history_plans import plan_is_finding
    from bench.history_seed import history_seed

    name = pg_cost.database_name(database)
    urls = {label: stack.database_recreate(f"{name}_hist_{label}") for label in LABELS}
    envs, indexes_created = {}, []
    for label, url in urls.items():
        envs[label] = stack.app_env(database=url, public_base_url="http://127.0.0.1:9", sandbox=False)
        stack.manage("migrate", "--no-input", "-v", "0", env=envs[label])
        if candidate_indexes:  # bench/history_indexes.py: the recommended indexes, before the data
            made = subprocess.run(
                [stack.PYTHON, "-m", "bench.history_indexes", "--database", url],
                cwd=stack.ROOT,
                check=True,
                capture_output=True,
                text=True,
            )
            indexes_created = json.loads(made.stdout.strip().splitlines()[-1])
    began = time.monotonic()
    seed = history_seed(urls["seeded"], notifications=notifications, orders=orders)
    seed["total_seconds"] = round(time.monotonic() - began, 1)
    # The empty database holds the same work in flight (the open orders and their notifications).
    in_flight = history_seed(urls["empty"], notifications=notifications, orders=orders, history=False)
    seed["empty_database_rows"] = in_flight["rows"]
    webs = {}
    samples: dict[str, list[dict]] = {label: [] for label in LABELS}
    intakes: dict[str, list[dict]] = {label: [] for label in LABELS}
    plans = []
    try:
        for label in LABELS:
            env = {**envs[label], "DATABASE_CONN_MAX_AGE": "3600"}  # backends live the whole run (pg_cost)
            webs[label] = stack.gunicorn_start(f"history-web-{label}", "config.wsgi", env, workers=web_workers)
        for number in range(rounds):
            for label in LABELS:
                stack.redis_flush()
                intake = _intake(webs[label], urls[label], webhooks=webhooks, tag=f"h{number}{label}", warm=number == 0)
                explain = label == "seeded" and number == rounds - 1
                probe = _probe(urls[label], reps=reps, orders=order_runs, explain=explain)
                plans = probe.get("plans", plans)
                intakes[label].append(intake)
                samples[label].append(_round_figures(intake, probe))
    finally:
        for web in webs.values():
            web.stop()
        stack.redis_flush()
        if not keep:
            import psycopg

            with psycopg.connect(stack.PG_URL, autocommit=True) as conn:
                for url in urls.values():
                    conn.execute(f'DROP DATABASE IF EXISTS "{pg_cost.database_name(url)}" WITH (FORCE)')
    costs = _costs(samples)
    return {
        "seed": seed,
        "candidate_indexes": indexes_created if candidate_indexes else "none (the models' own indexes only)",
        "rounds": rounds,
        "target": f"seeded / empty CPU (process + PostgreSQL) at most {FLAT:.2f}",
        "costs": costs,
        "not_flat": {thing: row["ratio"] for thing, row in costs.items() if not row["flat"]},
        "plans": plans,
        "seq_scans_on_history": [plan for plan in plans if plan_is_finding(plan.get("verdict", ""))],
        "intake_rounds": intakes,
        "databases": {label: pg_cost.database_name(url) for label, url in urls.items()} if keep else "dropped",
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", type=int, default=1_000_000)
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--webhooks", type=int, default=3000)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--order-runs", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the two databases (to try an index by hand)")
    parser.add_argument(
        "--candidate-indexes", action="store_true", help="with the indexes of bench/history_indexes.py created first"
    )
    args = parser.parse_args(argv)
    stack.services_check()
    database = stack.database_recreate()
    stack.redis_flush()
    result = history_bench(
        database=database,
        notifications=args.notifications,
        orders=args.orders,
        rounds=args.rounds,
        webhooks=args.webhooks,
        reps=args.reps,
        order_runs=args.order_runs,
        keep=args.keep,
        candidate_indexes=args.candidate_indexes,
    )
    print(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
