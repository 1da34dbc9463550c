"""Orders/s with two worker hosts, then one, at the platform's real latency, as root (docs/performance.md,
"How the entries measure"; "Scale-out" says why SCALEOUT_CONCURRENCY threads per host)."""

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from bench.harness import stack
from bench.harness.cluster import Cluster
from bench.harness.hosts import Hosts, missing
from bench.harness.platform import FINAL

API_MS, UPLOAD_MS = 300, 500  # the platform's real latency (bench/benchmarks/orders.py's)
WAITS_PER_ORDER_S = (4 * API_MS + UPLOAD_MS) / 1000  # GET transaction, slots, upload, PATCH, the callback's GET
SCALEOUT_CONCURRENCY = 4
SCALEOUT_ORDERS = 120
PLATFORM = "platform (sandbox, latency emulator, this process)"
ROLES = {  # the processes by the host they stand for
    **dict.fromkeys(("wk1", "wk2", "beat"), "worker hosts"),
    **dict.fromkeys(("web1", "web2", "haproxy"), "web hosts and balancer"),
    **dict.fromkeys(("postgres", "redis", "rabbitmq"), "database host"),
}


def completed(cluster: Cluster, ids: list[str], *, timeout: float) -> dict:
    """Until each order has a completing PATCH and our status endpoint says it finished: their report."""
    deadline, statuses = time.monotonic() + timeout, {}
    while time.monotonic() < deadline:
        patches = cluster.patches(ids)
        if all(any(p.get("status") == "completed" for p in each) for each in patches.values()):
            break
        time.sleep(0.25)
    while time.monotonic() < deadline and len(statuses) < len(ids):
        asked = cluster.statuses(set(ids) - set(statuses))
        statuses |= {txn: status for txn, status in asked.items() if status in FINAL}
        time.sleep(0.25)
    statuses = cluster.statuses(ids)
    accepted = Counter(len(each) for each in cluster.patches(ids).values())
    report = {"orders": len(ids), "statuses": dict(Counter(statuses.values()))}
    report["accepted_patches_per_order"] = dict(sorted(accepted.items()))
    report["ok"] = bool(ids) and accepted == {1: len(ids)} and report["statuses"] == {"REQUEST_COMPLETED": len(ids)}
    return report


def _machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every CPU of the machine so far, from /proc/stat."""
    values = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(values[:8]) - values[3] - values[4], sum(values[:8])  # less idle and iowait


def _cpu_now(cluster: Cluster) -> dict[str, float]:
    return cluster.hosts.cpu_seconds() | {"this process": sum(os.times()[:2])}


def _run(cluster: Cluster, orders: int, *, hosts: int, concurrency: int) -> dict:
    from django.db.models import Max, Min

    from partner.sandbox.models import ResponsePatch, Transaction

    cluster.workers_ready(["wk1", "wk2"][:hosts])
    load_before = os.getloadavg()
    cpu_before, machine_before, began = _cpu_now(cluster), _machine_busy(), time.monotonic()
    ids = cluster.orders_create(orders)
    report = completed(cluster, ids, timeout=900)
    cpu_after, machine_after, elapsed = _cpu_now(cluster), _machine_busy(), time.monotonic() - began
    first = Transaction.objects.filter(id__in=ids).aggregate(at=Min("created_at"))["at"]
    last = ResponsePatch.objects.filter(transaction_id__in=ids).aggregate(at=Max("created_at"))["at"]
    span = (last - first).total_seconds() if first and last else None
    by_role: Counter = Counter()
    for name, seconds in cpu_after.items():
        by_role[ROLES.get(name, PLATFORM)] += max(0.0, seconds - cpu_before.get(name, 0.0))
    busy = (machine_after[0] - machine_before[0]) / max(1, machine_after[1] - machine_before[1])
    rate = len(ids) / span if span else None
    bound = hosts * concurrency / WAITS_PER_ORDER_S  # every thread waiting on the platform all the time
    return report | {
        "span_s": round(span, 2) if span else None,
        "orders_per_s": round(rate, 2) if rate else None,
        "waits_alone_allow_per_s": round(bound, 2),
        "share_of_what_waits_allow": round(rate / bound, 2) if rate else None,
        "cpu_ms_per_order": {role: round(seconds * 1000 / len(ids)) for role, seconds in sorted(by_role.items())},
        "drill_cores_used": round(sum(by_role.values()) / elapsed, 2),  # of the machine's os.cpu_count()
        "worker_hosts_cores_used": round(by_role["worker hosts"] / elapsed, 2),
        "machine_busy_pct": round(100 * busy, 1),  # every process of the machine, ours or not
        "cpus": os.cpu_count(),
        "load_average_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
    }


def scaleout(orders: int = SCALEOUT_ORDERS, concurrency: int = SCALEOUT_CONCURRENCY) -> dict:
    """The cluster up, both worker hosts restarted at `concurrency` threads; two hosts, then one."""
    hosts = Hosts()
    cluster = Cluster(hosts, api_ms=API_MS, upload_ms=UPLOAD_MS)
    try:
        cluster.start()
        for host in ("wk1", "wk2"):
            hosts.stop(host)
            cluster.worker_start(host, concurrency)
        cluster.workers_ready(["wk1", "wk2"])
        completed(cluster, cluster.orders_create(4 * concurrency), timeout=300)  # warm-up
        runs = {"2_worker_hosts": _run(cluster, orders, hosts=2, concurrency=concurrency)}
        hosts.stop("wk2")  # gone from the processes: the supervisor leaves it stopped
        runs["1_worker_host"] = _run(cluster, orders, hosts=1, concurrency=concurrency)
    finally:
        cluster.close()
        hosts.destroy()
    one, two = runs["1_worker_host"]["orders_per_s"], runs["2_worker_hosts"]["orders_per_s"]
    return {
        "platform": {"api_ms": API_MS, "upload_ms": UPLOAD_MS, "waits_per_order_s": WAITS_PER_ORDER_S},
        "threads_per_worker_host": concurrency,
        "orders_per_run": orders,
        **runs,
        "two_over_one": round(two / one, 2) if one and two else None,
        "ok": all(run["ok"] for run in runs.values()),
    }


def scaleout_bench(*, database: str | None = None, orders: int | None = None, concurrency: int | None = None) -> dict:
    """In a process of its own, as the cluster configures Django for itself (the hosts run their own database)."""
    absent = missing()
    if absent:
        return {"ok": False, "skipped": f"this machine lacks {', '.join(absent)}"}
    sizes = (f"--orders={orders or SCALEOUT_ORDERS}", f"--concurrency={concurrency or SCALEOUT_CONCURRENCY}")
    report = stack.in_own_process("bench.benchmarks.scaleout", *sizes)
    return {"scaleout": report, "ok": report["ok"]} if "error" not in report else report


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The scale-out benchmark in this process")
    parser.add_argument("--orders", type=int, default=SCALEOUT_ORDERS, help="orders per run")
    parser.add_argument("--concurrency", type=int, default=SCALEOUT_CONCURRENCY, help="threads per worker host")
    parser.add_argument("--output", required=True, help="where to write the report (JSON)")
    args = parser.parse_args()
    result = scaleout(args.orders, args.concurrency)
    Path(args.output).write_text(json.dumps(result, indent=2, default=str))
    sys.exit(0 if result["ok"] else 1)
