"""Fault drill (long, so a bench script): PostgreSQL restarted while webhooks pour in.

    .venv/bin/python bench/drill_postgres_restart.py [--rate 300] [--seconds 20]

The intake runs under gunicorn as in `make bench`; the load generator sends
signed notifications at a fixed rate; a few seconds in, the PostgreSQL
cluster is restarted (`pg_ctlcluster 15 main restart`: this restarts the
machine's shared server, so run it when nobody else needs PostgreSQL).
Afterwards every answer is classified: a 202 must have its row (never a 202
without it); the rest must be 5xx or a dropped connection, which the
platform redelivers. Writes bench/results/drill_postgres_restart.json.
"""

import argparse
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import stack  # noqa: E402
from bench.intake import load_run, notifications_build  # noqa: E402


def restart_command(cluster: str) -> list[str]:
    version, name = cluster.split("/", 1)
    return ["pg_ctlcluster", version, name, "restart"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="PostgreSQL restarted under webhook load")
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--restart-after", type=float, default=5.0)
    parser.add_argument("--cluster", default="15/main", help="version/name for pg_ctlcluster")
    parser.add_argument("--web-workers", type=int, default=4)
    args = parser.parse_args(argv)

    try:
        stack.services_check()
    except stack.NotAnswering as exc:
        print(exc.code, file=sys.stderr)
        return 2
    database = stack.database_recreate("bench_partner_drill")
    stack.redis_flush()
    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    stack.manage("migrate", "--no-input", "-v", "0", env=env)

    web = stack.gunicorn_start("drill-pg-web", "config.wsgi", env, workers=args.web_workers)
    try:
        load_run(web.port, notifications_build(300, tag="pgwarm"), concurrency=16)
        items = notifications_build(int(args.rate * args.seconds), tag="pgdrill")
        outcome = {}

        def drive():
            outcome["result"] = load_run(web.port, items, concurrency=64, rate=args.rate)

        driver = threading.Thread(target=drive)
        driver.start()
        time.sleep(args.restart_after)
        began = time.monotonic()
        restart = subprocess.run(restart_command(args.cluster), capture_output=True, text=True)
        restart_s = time.monotonic() - began
        driver.join()
        result = outcome["result"]
    finally:
        web.stop()

    import psycopg

    keys = [key for _, _, key in items]
    with psycopg.connect(database) as conn:
        stored = {
            row[0]
            for row in conn.execute("SELECT dedupe_key FROM inbox_notification WHERE dedupe_key = ANY(%s)", [keys])
        }
    classes = Counter()
    for (_, _, key), code in zip(items, result["status"], strict=True):
        has_row = key in stored
        if code == 202:
            classes["202 with its row" if has_row else "202 WITHOUT its row"] += 1
        elif code >= 500:
            classes[f"{code} (row {'stored' if has_row else 'not stored'})"] += 1
        elif code == 0:
            classes[f"connection dropped (row {'stored' if has_row else 'not stored'})"] += 1
        else:
            classes[f"{code} (row {'stored' if has_row else 'not stored'})"] += 1
    report = {
        "rate": args.rate,
        "requests": len(items),
        "restart_command": " ".join(restart_command(args.cluster)),
        "restart_ok": restart.returncode == 0,
        "restart_s": round(restart_s, 2),
        "answers": dict(classes),
        "ok": classes["202 WITHOUT its row"] == 0 and restart.returncode == 0,
    }
    stack.RESULTS.mkdir(parents=True, exist_ok=True)
    (stack.RESULTS / "drill_postgres_restart.json").write_text(json.dumps(report, indent=2))
    print(
        f"PostgreSQL restarted under {args.rate:g} webhooks/s ({report['restart_command']}: "
        f"{'ok' if report['restart_ok'] else restart.stderr.strip()}, {report['restart_s']} s)"
    )
    for name, count in sorted(classes.items()):
        print(f"  {name}: {count}")
    print("  checked: every 202 has its row" if report["ok"] else "  FAILED: a 202 without its row")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
