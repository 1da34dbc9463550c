"""Memory of every process kind across 100,000 webhooks: does any of them grow?

gunicorn (`config.wsgi`, 4 sync workers, sandbox off) receives signed `created` notifications
of new transactions from the load generator (bench/load.py, its own process, 32 connections,
closed loop), and one Celery worker (`--concurrency=2`, prefork) consumes them: its main
process runs the inbox relay (notifications to the broker), its pool children the tasks. Each
notification costs the worker two tasks: processing the notification (the order opened, a
fulfill task enqueued) and the fulfill task, which fails the order at once because the
notification's `resourceRef` names a host that is not the service (partner/fulfillment/automated/pipeline.py
`_transaction_read`): the worker's whole path with the database and the broker, no call to a
service that is not there.

The webhooks go in chunks of 10,000. After each chunk the bench waits until the worker has
processed every notification and failed every order of it, then reads VmRSS and VmHWM
(`/proc/<pid>/status`) of every process: gunicorn master and workers, Celery main process and
pool children. Per kind: RSS after the first chunk, after the last, the growth between them,
the growth over the last chunk alone, and the peak (VmHWM). A process that was replaced during
the run (a different pid) is reported.

"""

import json
import time
import uuid
from pathlib import Path

from bench import stack
from bench.intake import load_run

OUTSIDE_REF = "http://outside.invalid/partner/v2/transactions/"
KINDS = ("gunicorn_master", "gunicorn_worker", "celery_main", "celery_child")


def notifications_build(count: int, *, tag: str) -> list[tuple[str, str, str]]:
    """`count` distinct signed transaction notifications whose resourceRef is not on the service."""
    from partner.platform.signatures import signature_compute

    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    built = []
    for number in range(count):
        event_id = f"{tag}-{number:07d}-{uuid.uuid4().hex[:8]}"
        resource_id = uuid.uuid4().hex
        body = json.dumps(
            {
                "eventId": event_id,
                "eventTime": stamp,
                "eventType": "created",
                "meta": {
                    "resourceType": "urn:svc:platform:transaction",
                    "resourceId": resource_id,
                    "instanceId": "address-verification",
                    "resourceRef": OUTSIDE_REF + resource_id,
                },
            }
        )
        built.append((body, signature_compute(body.encode(), stack.SIGNING_SECRET), f"id:{event_id}"))
    return built


def _status(pid: int) -> dict[str, int]:
    found = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                found[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return found


def memory_sample(web: stack.Process, worker: stack.Process) -> dict[str, dict[int, dict]]:
    """{kind: {pid: {"VmRSS": KiB, "VmHWM": KiB}}} of every process we run."""
    celery_main = worker.popen.pid
    return {
        "gunicorn_master": {web.popen.pid: _status(web.popen.pid)},
        "gunicorn_worker": {pid: _status(pid) for pid in stack.web_workers(web)},
        "celery_main": {celery_main: _status(celery_main)},
        "celery_child": {pid: _status(pid) for pid in stack.children(celery_main)},
    }


def drained_wait(database: str, *, expected: int, timeout: float) -> float | None:
    """Seconds until every notification is finished and `expected` orders have failed (None: timed out)."""
    import psycopg

    started = time.monotonic()
    with psycopg.connect(database, autocommit=True) as conn:
        while time.monotonic() - started < timeout:
            (waiting,) = conn.execute(
                "SELECT count(*) FROM inbox_notification WHERE state IN ('received', 'queued', 'processing')"
            ).fetchone()
            (failed,) = conn.execute("SELECT count(*) FROM fulfillment_order WHERE status = 'FAILED'").fetchone()
            if not waiting and failed >= expected:
                return round(time.monotonic() - started, 2)
            time.sleep(0.25)
    return None


def _cpu(process: stack.Process) -> float:
    return sum(stack.cpu_seconds(pid) for pid in process.pids())


def _mib(kib: float | None) -> float | None:
    return None if kib is None else round(kib / 1024, 1)


def _kind_summary(samples: list[dict], kind: str) -> dict:
    first, last = samples[0]["processes"][kind], samples[-1]["processes"][kind]
    before_last = samples[-2]["processes"][kind] if len(samples) > 1 else first

    def mean_rss(snapshot):
        values = [item.get("VmRSS") for item in snapshot.values() if item.get("VmRSS")]
        return sum(values) / len(values) if values else None

    rss_first, rss_last, rss_before_last = mean_rss(first), mean_rss(last), mean_rss(before_last)
    peaks = [item.get("VmHWM") for item in last.values() if item.get("VmHWM")]
    return {
        "processes": len(last),
        "replaced_during_run": sorted(set(first) ^ set(last)) or None,
        "rss_mib_after_first_chunk": _mib(rss_first),
        "rss_mib_after_last_chunk": _mib(rss_last),
        "growth_pct": round((rss_last - rss_first) * 100 / rss_first, 2) if rss_first and rss_last else None,
        "growth_pct_over_last_chunk": (
            round((rss_last - rss_before_last) * 100 / rss_before_last, 2) if rss_before_last and rss_last else None
        ),
        "rss_mib_by_process_after_last_chunk": [_mib(item.get("VmRSS")) for item in last.values()],
        "peak_rss_mib": _mib(max(peaks) if peaks else None),
    }


def memory_bench(
    *, database: str, webhooks: int = 100_000, chunk: int = 10_000, web_workers: int = 4, concurrency: int = 2
) -> dict:
    """`webhooks` notifications in chunks through gunicorn and a Celery worker; RSS after each chunk.

    Returns {"server", "worker", "webhooks", "chunks": [per chunk: webhooks so far, accepted/s,
    drain seconds, RSS MiB by kind], "by_kind": {kind: `_kind_summary`}, "status_counts"}.
    """
    from bench.end_to_end import django_setup, worker_ready
    from bench.intake import summarize

    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    django_setup(env)
    web = stack.gunicorn_start("memory-web", "config.wsgi", env, workers=web_workers)
    worker = stack.celery_start("memory-worker", env, concurrency=concurrency)
    samples, chunks, statuses = [], [], {}
    try:
        worker_ready()
        sent = 0
        while sent < webhooks:
            count = min(chunk, webhooks - sent)
            items = notifications_build(count, tag=f"mem{sent // chunk:03d}")
            cpu_before = _cpu(web), _cpu(worker)
            result = summarize(load_run(web.port, items, concurrency=32))
            sent += count
            for code, number in result["status_counts"].items():
                statuses[code] = statuses.get(code, 0) + number
            drained = drained_wait(database, expected=sent, timeout=max(600, count / 20))
            cpu_web, cpu_worker = _cpu(web) - cpu_before[0], _cpu(worker) - cpu_before[1]
            snapshot = memory_sample(web, worker)
            samples.append({"webhooks": sent, "processes": snapshot})
            chunks.append(
                {
                    "webhooks": sent,
                    "accepted_per_s": result["accepted_per_s"],
                    "worker_drained_after_s": drained,
                    "gunicorn_cpu_ms_per_webhook": round(cpu_web * 1000 / count, 2),
                    "worker_cpu_ms_per_webhook": round(cpu_worker * 1000 / count, 2),
                    "rss_mib": {kind: [_mib(item.get("VmRSS")) for item in snapshot[kind].values()] for kind in KINDS},
                }
            )
    finally:
        worker.stop()
        web.stop()
    return {
        "server": f"gunicorn config.wsgi, {web_workers} workers, sandbox off",
        "worker": f"celery worker --pool=prefork --concurrency={concurrency} (inbox relay in its main process)",
        "webhooks": sent,
        "status_counts": statuses,
        "chunks": chunks,
        "by_kind": {kind: _kind_summary(samples, kind) for kind in KINDS},
    }
