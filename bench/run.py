"""`make bench` and `make drill`: the benchmarks and drills of BENCHMARKS, printed and written as JSON.

    .venv/bin/python bench/run.py --list                 # what there is
    .venv/bin/python bench/run.py                        # every benchmark (about an hour)
    .venv/bin/python bench/run.py --only intake,statements
    .venv/bin/python bench/run.py --drills               # every drill (restarts the machine's PostgreSQL)

Refuses at once when PostgreSQL or Redis does not answer. Creates its own database (`bench_partner`,
dropped and created again), migrates it, uses Redis databases 10 and 11, and writes
bench/results/<name>.json and summary.json (the verdicts against TARGETS).
"""

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import stack  # noqa: E402

TARGETS = {
    "intake_per_s": 1000,
    "intake_p99_ms": 50,
    "intake_share_of_bare": 0.6,  # our closed-loop rate / the bare handler's
    "intake_cpu_over_bare": 1.6,  # gunicorn CPU per accepted webhook / the bare handler's, same load
    # Issue 16 brought the order from 39 to 19; every response a stored delivery sent by one fenced
    # sender (issue 22) costs 6 more: the delivery's row stored, sent and confirmed, the two fences
    # not written with a record, the slots kept apart from the documents (docs/performance.md).
    "statements_per_order": 25,
    "worker_cpu_over_bare_order": 2,
    "throughput_under_429": 0.7,
    "end_to_end_per_s_2_workers": 30,
    "service_calls_per_transaction": 5,  # 4 for the order with one attachment + 1 for the callback event
    "token_requests_per_lifetime": 1,
    # At the platform's real latency (300 ms per API call, 500 ms per upload), issue 26:
    "latency_over_fast": 0.8,  # one worker host's orders/s / its orders/s against the ~1 ms platform
    "latency_worker_rss_mib": 1024,  # every worker process of the host together
    "staff_burst_over_latency": 1.5,  # 200 staff deliveries at once / the time the waits alone explain
    "staff_admin_page_p99_ms": 300,  # the admin's order page while they send
    # Issue 26: two worker hosts at the platform's real latency fulfil this much more than one.
    "scaleout_two_over_one": 1.8,
}


@dataclass(frozen=True)
class Entry:
    """One benchmark or drill: where its function is, what it measures, and how it is called."""

    name: str
    run: str  # "module:function", imported only when it runs
    about: str
    options: Callable[[argparse.Namespace, str], dict]  # (the run's options, its database) -> keyword arguments
    drill: bool = False


def _sized(args, database, **sizes) -> dict:
    return {"database": database, **{key: value for key, value in sizes.items() if value is not None}}


# Every benchmark and drill, in the order `make bench` runs them. The one table: --only, --list and
# the Makefile read it; bench/README.md says what each measures.
BENCHMARKS = (
    Entry(
        "statements",
        "bench.statements:statements_bench",
        "SQL statements and Celery tasks of one automated order, webhook to completion (in-process, ~30 s)",
        lambda args, database: {},
    ),
    Entry(
        "intake",
        "bench.intake:intake_bench",
        "POST /v1/webhooks under gunicorn: rate, latency, CPU per webhook against the bare handler (~3 min)",
        lambda args, database: {
            "database": database,
            "workers": args.web_workers,
            "threads": args.web_threads,
            "requests": args.requests,
            "concurrency": args.concurrency,
            "rate": args.rate,
        },
    ),
    Entry(
        "end_to_end",
        "bench.end_to_end:end_to_end_bench",
        "orders/s with 1 and 2 worker processes against the sandbox; calls and tokens per order; CPU by process",
        lambda args, database: _sized(args, database, transactions=args.transactions or 200),
    ),
    Entry(
        "latency",
        "bench.latency:latency_bench",
        "orders/s, latency, CPU, RSS against a 300/500 ms platform and the 1 ms one; 200 staff deliveries (~6 min)",
        lambda args, database: _sized(
            args,
            database,
            transactions=args.transactions,
            pools=tuple(args.pools.split(",")) if args.pools else None,
            api_ms=args.api_ms,
            upload_ms=args.upload_ms,
            staff_deliveries=args.staff_deliveries,
        ),
    ),
    Entry(
        "scaleout",
        "bench.drill_hosts:scaleout_bench",
        "orders/s with 2 worker hosts / 1 at the platform's latency (the hosts drill's layout, no fault; ~3 min, root)",
        lambda args, database: _sized(args, database, orders=args.transactions, concurrency=args.threads),
    ),
    Entry(
        "order_cpu",
        "bench.order_cpu:order_cpu_bench",
        "our worker's CPU per order against a bare order (no ORM, no Celery)",
        lambda args, database: _sized(args, database, transactions=args.transactions, compare_worker=True),
    ),
    Entry(
        "faults_429",
        "bench.faults_429:faults_429_bench",
        "orders/s with 429 + Retry-After: 10 on a third of the calls, against fault-free (~10 min)",
        lambda args, database: _sized(args, database, transactions=args.transactions),
    ),
    Entry(
        "panels",
        "bench.panels:panels_bench",
        "100 open lender panels polling: service calls, queries per poll, latency",
        lambda args, database: {"database": database},
    ),
    Entry(
        "reconcile",
        "bench.reconcile_cost:reconcile_cost_process",
        "calls to the service per reconciliation run with 10,000 finished transactions",
        lambda args, database: {},
    ),
    Entry(
        "memory",
        "bench.memory:memory_bench",
        "RSS of every process kind across 100,000 webhooks (~30 min)",
        lambda args, database: {"database": database},
    ),
    Entry(
        "postgres_restart",
        "bench.drill_postgres_restart:drill",
        "drill: PostgreSQL restarted under 300 webhooks/s; every 202 has its row (restarts the machine's server)",
        lambda args, database: {"database": database},
        drill=True,
    ),
    Entry(
        "hosts",
        "bench.drill_hosts:drill",
        "drill: 2 web + 2 worker hosts (network namespaces) behind haproxy: a worker host cut off, a web host "
        "killed, RabbitMQ restarted, at the platform's latency; 2 vs 1 worker hosts (~5 min, root)",
        lambda args, database: _sized(args, database, orders=args.transactions, concurrency=args.threads),
        drill=True,
    ),
    Entry(
        "schedule",
        "bench.drills.schedule:schedule_bench",
        "drill: a randomised fault schedule (a seed, printed) over every kind of order on the hosts drill's "
        "layout, its history held against the invariants (~2 min for 12 orders, root)",
        lambda args, database: _sized(
            args, database, orders=args.transactions, seed=args.seed, faults=args.faults, broker=args.broker
        ),
        drill=True,
    ),
)
BY_NAME = {entry.name: entry for entry in BENCHMARKS}


def _function(entry: Entry):
    module, _, name = entry.run.partition(":")
    return getattr(__import__(module, fromlist=[name]), name)


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def write(name: str, data: dict) -> Path:
    stack.RESULTS.mkdir(parents=True, exist_ok=True)
    path = stack.RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, default=str))
    return path


def show(title: str, data, indent: int = 0) -> None:
    pad = "  " * indent
    if title:
        print(f"{pad}{title}")
    for key, value in data.items():
        if isinstance(value, dict):
            show(f"{key}:", value, indent + 1)
        else:
            print(f"{pad}  {key}: {value}")


def verdict(name: str, measured, target, ok: bool) -> dict:
    line = {"measured": measured, "target": target, "met": bool(ok)}
    print(f"  {'MET   ' if ok else 'MISSED'} {name}: {measured} (target {target})")
    return line


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Benchmarks and drills of the partner application")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and drills, then stop")
    parser.add_argument("--only", default="", help="comma-separated names (--list); default: every benchmark")
    parser.add_argument("--drills", action="store_true", help="every drill instead of the benchmarks")
    parser.add_argument("--requests", type=int, default=20000, help="intake: notifications in the closed loop")
    parser.add_argument("--concurrency", type=int, default=32, help="intake: connections of the load generator")
    parser.add_argument("--rate", type=float, default=1000.0, help="intake: the fixed-rate phase (10 s)")
    parser.add_argument("--web-workers", type=int, default=int(os.environ.get("BENCH_WEB_WORKERS", 4)))
    parser.add_argument("--web-threads", type=int, default=int(os.environ.get("BENCH_WEB_THREADS", 1)))
    parser.add_argument("--transactions", type=int, default=None, help="orders per run (each benchmark's default)")
    parser.add_argument("--pools", default="", help='latency: worker models, e.g. "threads:64,threads:32,prefork:2"')
    parser.add_argument("--api-ms", type=float, default=300.0, help="latency: the platform's wait per API call")
    parser.add_argument("--upload-ms", type=float, default=500.0, help="latency: the platform's wait per upload")
    parser.add_argument("--staff-deliveries", type=int, default=200, help="latency: the staff's burst (0: none)")
    parser.add_argument("--threads", type=int, default=None, help="scaleout, hosts: threads per worker host")
    parser.add_argument("--seed", type=int, default=None, help="schedule: replay this seed")
    parser.add_argument("--faults", default="", help="schedule: the fault kinds drawn from (default: all)")
    parser.add_argument("--broker", default="redis", choices=("redis", "rabbitmq"), help="schedule: the broker")
    args = parser.parse_args(argv)

    if args.list:
        for entry in BENCHMARKS:
            print(f"  {entry.name:<18} {entry.about}")
        return 0
    names = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        print(f"unknown: {', '.join(unknown)} (bench/run.py --list)", file=sys.stderr)
        return 2
    chosen = [BY_NAME[name] for name in names] or [entry for entry in BENCHMARKS if entry.drill == args.drills]

    try:
        stack.services_check()
    except stack.NotAnswering as exc:
        print(exc.code, file=sys.stderr)
        return 2

    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(f"bench {started} on {machine()}")
    database = stack.database_prepared()
    print(f"database {stack.DB_NAME} created and migrated; Redis dbs {stack.BROKER_DB}/{stack.CACHE_DB} flushed")

    results = {"started": started, "machine": machine(), "targets": TARGETS}
    for entry in chosen:
        print(f"\n== {entry.name}: {entry.about}", flush=True)
        began = time.monotonic()
        figures = _function(entry)(**entry.options(args, database))
        figures = (
            {key: value for key, value in figures.items() if key != "sql"} if entry.name == "statements" else figures
        )
        results[entry.name] = figures
        write(entry.name, figures)
        show("", figures)
        print(f"  ({time.monotonic() - began:.0f} s)")

    print("\n== against the targets")
    results["verdicts"] = verdicts(results)
    path = write("summary", results)
    print(f"\nresults written to {path.parent}/")
    return 0


def verdicts(results: dict) -> dict:
    found = {}
    drill = results.get("postgres_restart")
    if drill:
        lost = drill["answers"].get("202 WITHOUT its row", 0)
        found["postgres_restart"] = verdict("202s without their row (PostgreSQL restarted)", lost, 0, drill["ok"])
    hosts = results.get("hosts")
    if hosts and "skipped" in hosts:
        print(f"  SKIPPED hosts drill: {hosts['skipped']}")
    elif hosts:
        for scenario in ("worker_cut", "web_stop", "broker_restart"):
            figures = hosts.get(scenario) or {}
            patches = figures.get("accepted_patches_per_order")
            found[f"hosts_{scenario}"] = verdict(
                f"hosts drill, {scenario.replace('_', ' ')}: accepted PATCHes per order {{patches: orders}}",
                patches,
                "{1: every order}",
                bool(figures.get("ok")),
            )
        if hosts.get("scaleout"):
            found["hosts_scaleout_two_over_one"] = scaleout_verdict(hosts["scaleout"])
    alone = results.get("scaleout")
    if alone and "skipped" in alone:
        print(f"  SKIPPED scaleout: {alone['skipped']}")
    elif alone and alone.get("scaleout"):
        found["scaleout_two_over_one"] = scaleout_verdict(alone["scaleout"])
    elif alone:
        found["scaleout_two_over_one"] = verdict("scale-out: no figure", alone.get("error"), "a ratio", False)
    both, e2e = results.get("intake"), results.get("end_to_end")
    intake, bare = (both["ours"], both["bare"]) if both else (None, None)
    if intake:
        closed, fixed = intake["closed_loop"], intake["fixed_rate"]
        found["intake_per_s"] = verdict(
            "intake webhooks/s (closed loop)",
            closed["accepted_per_s"],
            TARGETS["intake_per_s"],
            closed["accepted_per_s"] >= TARGETS["intake_per_s"],
        )
        p99 = fixed["p99_ms"]
        found["intake_p99_ms"] = verdict(
            f"intake p99 ms at {fixed['rate_asked']:g}/s",
            p99,
            TARGETS["intake_p99_ms"],
            p99 is not None and p99 < TARGETS["intake_p99_ms"],
        )
        lost = sum(
            phase["stored"]["accepted_missing"] + phase["stored"]["accepted_stored_twice_or_more"]
            for phase in (closed, fixed)
        )
        found["intake_nothing_lost"] = verdict("accepted but not stored exactly once", lost, 0, lost == 0)
        off_queue = sum(
            abs(phase["queue_length"] - phase["stored"]["accepted"])
            for phase in (closed, fixed)
            if "queue_length" in phase
        )
        found["intake_all_relayed"] = verdict(
            "accepted but not handed to the broker by the relay (or handed twice)", off_queue, 0, off_queue == 0
        )
    if intake and bare:
        share = round(intake["closed_loop"]["accepted_per_s"] / bare["closed_loop"]["accepted_per_s"], 3)
        found["intake_share_of_bare"] = verdict(
            "intake rate / the bare handler's",
            share,
            TARGETS["intake_share_of_bare"],
            share >= TARGETS["intake_share_of_bare"],
        )
        for phase in ("closed_loop", "fixed_rate"):
            ours, least = intake[phase]["server_cpu_ms_per_request"], bare[phase]["server_cpu_ms_per_request"]
            ratio = round(ours / least, 2) if least else None
            found[f"intake_cpu_over_bare_{phase}"] = verdict(
                f"gunicorn CPU per webhook / the bare handler's ({phase.replace('_', ' ')})",
                ratio,
                TARGETS["intake_cpu_over_bare"],
                ratio is not None and ratio <= TARGETS["intake_cpu_over_bare"],
            )
    if e2e:
        runs = e2e["runs"]
        two = runs.get("2") or runs.get(2)
        if two:
            found["end_to_end_per_s_2_workers"] = verdict(
                "end-to-end transactions/s with 2 workers",
                two["transactions_per_s"],
                TARGETS["end_to_end_per_s_2_workers"],
                two["transactions_per_s"] >= TARGETS["end_to_end_per_s_2_workers"],
            )
        for key, run in runs.items():
            calls = run["service_calls_per_transaction"]
            found[f"service_calls_{key}"] = verdict(
                f"service calls per transaction ({key} worker(s))",
                calls,
                TARGETS["service_calls_per_transaction"],
                calls == TARGETS["service_calls_per_transaction"],
            )
            tokens = run["token_requests"]
            found[f"token_requests_{key}"] = verdict(
                f"token requests in the run ({key} worker(s), lifetime {run['token_lifetime_s']} s)",
                tokens,
                run["token_lifetimes_spanned"],
                tokens <= run["token_lifetimes_spanned"],
            )
    latency = results.get("latency")
    if latency:
        found.update(latency_verdicts(latency))
    statements = results.get("statements")
    if statements:
        total, target = statements["total"], TARGETS["statements_per_order"]
        found["statements_per_order"] = verdict(
            f"SQL statements per automated order (before issue 16: {statements['before']})",
            total,
            target,
            total <= target,
        )
        found["tasks_per_order"] = verdict("Celery tasks per automated order", statements["tasks_per_order"], 2, True)
    order_cpu = results.get("order_cpu")
    if order_cpu and order_cpu.get("worker_over_bare") is not None:
        ratio, target = order_cpu["worker_over_bare"], TARGETS["worker_cpu_over_bare_order"]
        found["worker_cpu_over_bare_order"] = verdict(
            "worker CPU per order / the bare order's", ratio, target, ratio <= target
        )
    faults = results.get("faults_429")
    if faults:
        found["throughput_under_429"] = verdict(
            "throughput with 429 on a third of the calls / without",
            faults["ratio"],
            TARGETS["throughput_under_429"],
            faults["ratio"] is not None and faults["ratio"] >= TARGETS["throughput_under_429"],
        )
    memory = results.get("memory")
    if memory:
        growth = {kind: summary["growth_pct"] for kind, summary in memory["by_kind"].items()}
        grown = {kind: pct for kind, pct in growth.items() if pct is None or pct > 5}
        found["memory_flat"] = verdict(
            "RSS growth, first to last 10,000 webhooks (% by process kind)", growth, "≤ 5", not grown
        )
    panels = results.get("panels")
    if panels:
        calls = panels["paced"]["service_calls"] + panels["closed_loop"]["service_calls"]
        found["panel_service_calls"] = verdict("service calls while 100 panels poll", calls, 0, calls == 0)
        most = panels["queries_per_poll"]["max"]
        found["panel_queries_per_poll"] = verdict("queries per progress poll (most)", most, 2, most <= 2)
    return found


def scaleout_verdict(figures: dict) -> dict:
    ratio, target = figures.get("two_over_one"), TARGETS["scaleout_two_over_one"]
    one, two = figures["1_worker_host"], figures["2_worker_hosts"]
    rates = f"{two['orders_per_s']} / {one['orders_per_s']}, {figures['threads_per_worker_host']} threads each"
    return verdict(
        f"orders/s with 2 worker hosts / 1 at 300/500 ms ({rates})",
        ratio,
        target,
        bool(figures.get("ok")) and ratio is not None and ratio >= target,
    )


def latency_verdicts(latency: dict) -> dict:
    found = {}
    for model, runs in latency["models"].items():
        ratio = runs["slow_over_fast"]
        rates = f"{runs['slow']['orders_per_s']} / {runs['fast']['orders_per_s']}"
        found[f"latency_over_fast_{model}"] = verdict(
            f"orders/s at 300/500 ms / at 1 ms ({model}: {rates})",
            ratio,
            TARGETS["latency_over_fast"],
            ratio is not None and ratio >= TARGETS["latency_over_fast"],
        )
        rss = max(runs["slow"]["worker_peak_rss_mib"], runs["fast"]["worker_peak_rss_mib"])
        found[f"latency_worker_rss_{model}"] = verdict(
            f"peak RSS of the worker host, MiB ({model})", rss, TARGETS["latency_worker_rss_mib"], rss <= 1024
        )
    staff = latency.get("staff")
    if staff:
        over = staff["over_latency"]
        times = f"{staff['burst_s']} s / {staff['latency_explains_s']} s the waits explain"
        found["staff_burst_over_latency"] = verdict(
            f"{staff['deliveries']} staff deliveries at once: {times}",
            over,
            TARGETS["staff_burst_over_latency"],
            staff["all_sent"] and over <= TARGETS["staff_burst_over_latency"],
        )
        p99 = staff["admin_page"]["p99_ms"]
        found["staff_admin_page_p99_ms"] = verdict(
            "admin order page p99 ms while they send",
            p99,
            TARGETS["staff_admin_page_p99_ms"],
            p99 is not None and p99 < TARGETS["staff_admin_page_p99_ms"],
        )
    return found


if __name__ == "__main__":
    sys.exit(main())
