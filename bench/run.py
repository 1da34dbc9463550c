"""`make bench` and `make drill`: the benchmarks and drills of BENCHMARKS, printed, written as JSON and
judged against the targets (bench/README.md says how to run them)."""

import argparse
import importlib
import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import stack  # noqa: E402
from bench.harness.verdicts import TARGETS, verdicts  # noqa: E402


@dataclass(frozen=True)
class Entry:
    """One benchmark or drill: where its function is, what it measures, and which options it takes."""

    name: str
    run: str  # "module:function", imported only when it runs
    about: str
    options: str = ""  # "parameter=option ...": the run's options it is called with ("database" always; None: its own)
    drill: bool = False

    def call(self, args: argparse.Namespace, database: str) -> dict:
        module, _, name = self.run.partition(":")
        pairs = [pair.partition("=") for pair in self.options.split()]
        given = {parameter: getattr(args, option or parameter) for parameter, _, option in pairs}
        options = {parameter: value for parameter, value in given.items() if value is not None}
        return getattr(importlib.import_module(module), name)(database=database, **options)


# Every benchmark and drill, in the order `make bench` runs them. The one table: --only, --list and
# the Makefile read it; docs/performance.md, "How the entries measure", says what each measures.
BENCHMARKS = (
    Entry(
        "intake",
        "bench.benchmarks.intake:intake_bench",
        "POST /v1/webhooks under gunicorn: rate, latency, CPU per webhook against the bare handler (~3 min)",
        "workers=web_workers threads=web_threads requests concurrency rate",
    ),
    Entry(
        "end_to_end",
        "bench.benchmarks.orders:end_to_end_bench",
        "orders/s with 1 and 2 prefork worker processes against the sandbox; calls and tokens per order; CPU",
        "transactions",
    ),
    Entry(
        "latency",
        "bench.benchmarks.orders:latency_bench",
        "orders/s, latency, CPU, RSS against a 300/500 ms platform and the 1 ms one; 200 staff deliveries (~6 min)",
        "transactions pools api_ms upload_ms staff_deliveries",
    ),
    Entry(
        "waits",
        "bench.benchmarks.waits:waits_bench",
        "waits at 300/500 ms and 1 ms: connected orders' answer -> PATCH and move -> event, staff deliveries, "
        "automated orders (p50/p99/max), CPU per order by process (~10 min)",
        "transactions staff_deliveries api_ms upload_ms",
    ),
    Entry(
        "scaleout",
        "bench.benchmarks.scaleout:scaleout_bench",
        "orders/s with 2 worker hosts / 1 at the platform's latency (network namespaces, haproxy; ~3 min, root)",
        "orders=transactions concurrency=threads",
    ),
    Entry(
        "memory", "bench.benchmarks.memory:memory_bench", "RSS of every process kind across 100,000 webhooks (~30 min)"
    ),
    Entry(
        "postgres_restart",
        "bench.drills.postgres_restart:drill",
        "drill: PostgreSQL restarted under 300 webhooks/s; every 202 has its row (restarts the machine's server)",
        drill=True,
    ),
    Entry(
        "schedule",
        "bench.drills.schedule:schedule_bench",
        "drill: a randomised fault schedule (a seed, printed; --each: a fixed one) over every kind of order on "
        "2 web + 2 worker hosts, its history held against the invariants (~2 min for 12 orders, root)",
        "orders=transactions seed faults broker each",
        drill=True,
    ),
)
BY_NAME = {entry.name: entry for entry in BENCHMARKS}


def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
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


def show(data: dict, indent: int = 1) -> None:
    for key, value in data.items():
        print(f"{'  ' * indent}{key}:" + ("" if isinstance(value, dict) else f" {value}"))
        if isinstance(value, dict):
            show(value, indent + 1)


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
    parser.add_argument(
        "--pools", type=lambda text: tuple(text.split(",")), help='latency: e.g. "threads:64,prefork:2"'
    )
    parser.add_argument("--api-ms", type=float, default=300.0, help="latency: the platform's wait per API call")
    parser.add_argument("--upload-ms", type=float, default=500.0, help="latency: the platform's wait per upload")
    parser.add_argument("--staff-deliveries", type=int, default=200, help="latency: the staff's burst (0: none)")
    parser.add_argument("--threads", type=int, default=None, help="scaleout: threads per worker host")
    parser.add_argument("--seed", type=int, default=None, help="schedule: replay this seed")
    parser.add_argument("--faults", default="", help="schedule: the fault kinds drawn from (default: all)")
    parser.add_argument("--broker", default="redis", choices=("redis", "rabbitmq"), help="schedule: the broker")
    parser.add_argument("--each", action="store_true", default=None, help="schedule: each of --faults once, in order")
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
        figures = entry.call(args, database)
        results[entry.name] = figures
        write(entry.name, figures)
        show(figures)
        print(f"  ({time.monotonic() - began:.0f} s)")

    print("\n== against the targets")
    results["verdicts"] = verdicts(results)
    path = write("summary", results)
    print(f"\nresults written to {path.parent}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
