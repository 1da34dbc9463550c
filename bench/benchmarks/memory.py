"""Memory of every process kind across 100,000 webhooks, each order failing at once (its `resourceRef`
names no service): does any of them grow? (docs/performance.md, "How the entries measure")"""

from bench.benchmarks.intake import load_run, notifications_build, summarize
from bench.harness import stack

KINDS = ("gunicorn_master", "gunicorn_worker", "celery_main", "celery_child")


def memory_sample(web: stack.Process, worker: stack.Process) -> dict[str, dict[int, tuple]]:
    """{kind: {pid: (VmRSS, VmHWM) in KiB}} of every process we run."""
    groups = ([web.popen.pid], stack.children(web.popen.pid), [worker.popen.pid], stack.children(worker.popen.pid))
    return {
        kind: {pid: (stack.memory_kib(pid, "VmRSS"), stack.memory_kib(pid)) for pid in pids}
        for kind, pids in zip(KINDS, groups, strict=True)
    }


def drained_wait(database: str, *, expected: int, timeout: float) -> float | None:
    """Seconds until every notification is processed and `expected` orders have failed (None: timed out)."""
    failed = "SELECT count(*) FROM fulfillment_order WHERE status = 'FAILED'"
    waiting = "SELECT 1 FROM inbox_notification WHERE state IN ('received', 'queued', 'processing')"
    query = f"SELECT ({failed}) >= {int(expected)} AND NOT EXISTS ({waiting})"  # noqa: S608 - a number of ours
    return stack.database_settled(database, query, timeout=timeout, interval=0.25)


def _mib(kib: float | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def _kind_summary(first: dict, last: dict) -> dict:
    def mean(snapshot: dict) -> float | None:
        values = [rss for rss, _ in snapshot.values() if rss]
        return sum(values) / len(values) if values else None

    before, after = mean(first), mean(last)
    peaks = [peak for _, peak in last.values() if peak]
    return {
        "processes": len(last),
        "replaced_during_run": sorted(set(first) ^ set(last)) or None,
        "rss_mib_after_first_chunk": _mib(before),
        "rss_mib_after_last_chunk": _mib(after),
        "growth_pct": round((after - before) * 100 / before, 2) if before and after else None,
        "peak_rss_mib": _mib(max(peaks, default=None)),
    }


def memory_bench(*, database: str, webhooks: int = 100_000, chunk: int = 10_000, web_workers: int = 4) -> dict:
    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    stack.django_setup(env)
    web = stack.gunicorn_start("memory-web", "config.wsgi", env, workers=web_workers)
    worker = stack.celery_start("memory-worker", env, concurrency=2)
    samples, chunks, statuses, sent = [], [], {}, 0
    try:
        stack.worker_ready()
        while sent < webhooks:
            count = min(chunk, webhooks - sent)
            items = notifications_build(count, tag=f"mem{sent // chunk:03d}")
            cpu_before = stack.cpu_of(web), stack.cpu_of(worker)
            result = summarize(load_run(web.port, items, concurrency=32))
            sent += count
            for code, number in result["status_counts"].items():
                statuses[code] = statuses.get(code, 0) + number
            drained = drained_wait(database, expected=sent, timeout=max(600, count / 20))
            cpu = stack.cpu_of(web) - cpu_before[0], stack.cpu_of(worker) - cpu_before[1]
            samples.append(memory_sample(web, worker))
            chunks.append(
                {
                    "webhooks": sent,
                    "accepted_per_s": result["accepted_per_s"],
                    "worker_drained_after_s": drained,
                    "gunicorn_cpu_ms_per_webhook": round(cpu[0] * 1000 / count, 2),
                    "worker_cpu_ms_per_webhook": round(cpu[1] * 1000 / count, 2),
                    "rss_mib": {kind: [_mib(rss) for rss, _ in samples[-1][kind].values()] for kind in KINDS},
                }
            )
    finally:
        worker.stop()
        web.stop()
    return {
        "server": f"gunicorn config.wsgi, {web_workers} workers, sandbox off",
        "worker": "celery worker --pool=prefork --concurrency=2 (inbox relay in its main process)",
        "webhooks": sent,
        "status_counts": statuses,
        "chunks": chunks,
        "by_kind": {kind: _kind_summary(samples[0][kind], samples[-1][kind]) for kind in KINDS},
    }
