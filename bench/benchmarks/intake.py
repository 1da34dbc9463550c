"""The intake against the bare handler (bench/harness/bare_webhook.py); docs/performance.md, "How the
entries measure", says how each phase and figure is measured."""

import json
import os
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from bench.harness import bare_webhook, stack
from partner.platform.signatures import signature_compute


def notifications_build(count: int, *, tag: str, secret: str = stack.SIGNING_SECRET) -> list[tuple[str, str, str]]:
    """`count` distinct notifications as the service sends them: (body, signature, dedupe key)."""
    built = []
    for number in range(count):
        event_id = f"{tag}-{number:07d}-{uuid.uuid4().hex[:8]}"
        resource_id = uuid.uuid4().hex
        document = {
            "eventId": event_id,
            "eventTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "eventType": "created",
            "meta": {
                "resourceType": "urn:svc:platform:transaction",
                "resourceId": resource_id,
                "instanceId": "address-verification",
                "resourceRef": f"http://127.0.0.1:9/sandbox/partner/v2/transactions/{resource_id}",
            },
        }
        body = json.dumps(document)
        built.append((body, signature_compute(body.encode(), secret), f"id:{event_id}"))
    return built


def load_run(port: int, items: list[tuple[str, str, str]], *, concurrency: int, rate: float = 0.0) -> dict:
    """Run the load generator in a second process; returns its per-request results."""
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "in.json", Path(folder) / "out.json"
        source.write_text(json.dumps([[body, sig] for body, sig, _ in items]))
        argv = [stack.PYTHON, "-m", "bench.harness.load", "--port", str(port), "--input", str(source)]
        argv += ["--output", str(target), "--concurrency", str(concurrency), "--rate", str(rate)]
        subprocess.run(argv, cwd=stack.ROOT, check=True)
        return json.loads(target.read_text())


def summarize(result: dict) -> dict:
    codes, latencies = Counter(result["status"]), result["latency"]
    accepted = codes.get(202, 0)
    return {
        "requests": len(result["status"]),
        "accepted": accepted,
        "status_counts": {str(code): count for code, count in sorted(codes.items())},
        "elapsed_s": round(result["elapsed"], 3),
        "accepted_per_s": round(accepted / result["elapsed"], 1) if result["elapsed"] else None,
        "p50_ms": stack.ms(stack.percentile(latencies, 0.50)),
        "p99_ms": stack.ms(stack.percentile(latencies, 0.99)),
        "max_ms": stack.ms(max(latencies) if latencies else None),
        "connections_opened": result["connections"],
        "generator_cpu_s": round(result["generator_cpu_seconds"], 2),
    }


def stored_check(database: str, table: str, items, result: dict) -> dict:
    """Every accepted notification stored exactly once; what was stored of the others."""
    import psycopg

    accepted, others = [], []
    for (_, _, key), code in zip(items, result["status"], strict=True):
        (accepted if code == 202 else others).append(key)
    with psycopg.connect(database) as conn:
        rows = dict(
            conn.execute(
                f"SELECT dedupe_key, count(*) FROM {table} WHERE dedupe_key = ANY(%s) GROUP BY dedupe_key",  # noqa: S608
                [accepted + others],
            ).fetchall()
        )
    accepted_rows = [rows.get(key, 0) for key in accepted]
    return {
        "accepted": len(accepted),
        "accepted_stored_once": sum(1 for count in accepted_rows if count == 1),
        "accepted_missing": sum(1 for count in accepted_rows if count == 0),
        "accepted_stored_twice_or_more": sum(1 for count in accepted_rows if count > 1),
        "not_accepted_but_stored": sum(1 for key in others if rows.get(key, 0)),
        "ok": all(count == 1 for count in accepted_rows),
    }


def relay_drained(database: str, *, timeout: float = 120) -> float | None:
    """Seconds until no notification waits for the relay (None: still waiting after `timeout`)."""
    query = "SELECT NOT EXISTS (SELECT 1 FROM inbox_notification WHERE state = 'received')"
    return stack.database_settled(database, query, timeout=timeout, interval=0.05)


def phases_run(process: stack.Process, sizes: dict, *, tag: str, relay=None) -> dict:
    """Warm up, then the closed-loop, fixed-rate and half-capacity phases against one server (and `relay`)."""
    database, requests, concurrency, rate = (sizes[key] for key in ("database", "requests", "concurrency", "rate"))
    table = "inbox_notification" if relay else bare_webhook.TABLE
    load_run(process.port, notifications_build(1000, tag=f"{tag}-warm"), concurrency=concurrency)
    if relay is not None:
        relay_drained(database)  # the warm-up's messages are on the queue before it is emptied
    results = {}
    for phase in ("closed_loop", "fixed_rate", "half_capacity"):
        phase_rate = {"closed_loop": 0.0, "fixed_rate": rate}.get(phase)
        if phase_rate is None:  # half of what the closed loop sustained: the latency of a server that keeps up
            phase_rate = max(10.0, round(results["closed_loop"]["accepted_per_s"] / 2))
        count = int(phase_rate * 10) if phase_rate else requests  # the open loops run 10 s
        if relay is not None:
            stack.redis_flush()
        items = notifications_build(count, tag=f"{tag}-{phase}")
        cpu_before, relay_before = stack.cpu_of(process), stack.cpu_of(relay) if relay else 0.0
        result = load_run(process.port, items, concurrency=concurrency * (2 if phase_rate else 1), rate=phase_rate)
        summary = summarize(result)
        summary["server_cpu_s"] = round(stack.cpu_of(process) - cpu_before, 2)
        summary["server_cpu_ms_per_request"] = round(summary["server_cpu_s"] * 1000 / max(1, count), 2)
        summary["rate_asked"] = phase_rate or None
        # Other work on the machine skews every figure: keep the load next to them.
        summary["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
        summary["stored"] = stored_check(database, table, items, result)
        if relay is not None:
            # The relay publishes while the load runs; what it had left when the load ended:
            summary["relay_drained_after_s"] = relay_drained(database)
            summary["relay_cpu_ms_per_request"] = round((stack.cpu_of(relay) - relay_before) * 1000 / max(1, count), 2)
            summary["queue_length"] = stack.queue_length()
            summary["queue_matches_accepted"] = summary["queue_length"] == summary["stored"]["accepted"]
        results[phase] = summary
    return results


def intake_bench(*, database: str, workers: int, threads: int, requests: int, concurrency: int, rate: float) -> dict:
    """Our intake, then the bare handler under the same gunicorn and load: {"ours", "bare", "cores"}."""
    sizes = {"database": database, "requests": requests, "concurrency": concurrency, "rate": rate}
    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    found = {"cores": len(os.sched_getaffinity(0))}
    for kind, app in (("ours", "config.wsgi"), ("bare", "bench.harness.bare_webhook:application")):
        if kind == "bare":
            bare_webhook.table_create(database)
        web = stack.gunicorn_start(f"{kind}-web", app, env, workers=workers, threads=threads)
        # No worker runs with ours (nothing would answer its calls): the relay alone, counted.
        relay = stack.spawn("intake-relay", [stack.PYTHON, "manage.py", "inbox_relay"], env) if kind == "ours" else None
        try:
            phases = phases_run(web, sizes, tag=f"intake-{kind}", relay=relay)
            memory = {f"web_worker_{pid}": stack.memory_kib(pid) for pid in stack.children(web.popen.pid)}
            memory |= {"relay": stack.memory_kib(relay.popen.pid)} if relay else {}
        finally:
            for process in filter(None, (relay, web)):
                process.stop()
        server = f"gunicorn {app}, {workers} workers" + (f" x {threads} threads" if threads > 1 else "")
        found[kind] = {"server": server, "concurrency": concurrency, **phases, "peak_rss_kib": memory}
    return found
