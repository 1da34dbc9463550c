"""Fault drill: PostgreSQL restarted while webhooks pour in (docs/performance.md, "How the entries measure").

`pg_ctlcluster 15 main restart` restarts the machine's shared server: run it when nobody else needs
PostgreSQL.
"""

import subprocess
import threading
import time
from collections import Counter

from bench.benchmarks.intake import load_run, notifications_build
from bench.harness import stack


def restart_command(cluster: str) -> list[str]:
    version, name = cluster.split("/", 1)
    return ["pg_ctlcluster", version, name, "restart"]


def drill(
    *,
    database: str,
    rate: float = 300.0,
    seconds: float = 20.0,
    restart_after: float = 5.0,
    cluster: str = "15/main",
    web_workers: int = 4,
) -> dict:
    """The drill against `database` (migrated); its report, with "ok" its verdict."""
    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    web = stack.gunicorn_start("drill-pg-web", "config.wsgi", env, workers=web_workers)
    try:
        load_run(web.port, notifications_build(300, tag="pgwarm"), concurrency=16)
        items = notifications_build(int(rate * seconds), tag="pgdrill")
        outcome = {}

        def drive():
            outcome["result"] = load_run(web.port, items, concurrency=64, rate=rate)

        driver = threading.Thread(target=drive)
        driver.start()
        time.sleep(restart_after)
        began = time.monotonic()
        restart = subprocess.run(restart_command(cluster), capture_output=True, text=True)
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
        if code == 202:
            classes["202 with its row" if key in stored else "202 WITHOUT its row"] += 1
        else:
            classes[f"{code or 'connection dropped'} (row {'stored' if key in stored else 'not stored'})"] += 1
    report = {
        "rate": rate,
        "requests": len(items),
        "restart_command": " ".join(restart_command(cluster)),
        "restart_ok": restart.returncode == 0,
        "restart_s": round(restart_s, 2),
        "answers": dict(classes),
        "ok": classes["202 WITHOUT its row"] == 0 and restart.returncode == 0,
    }
    print(
        f"PostgreSQL restarted under {rate:g} webhooks/s ({report['restart_command']}: "
        f"{'ok' if report['restart_ok'] else restart.stderr.strip()}, {report['restart_s']} s)"
    )
    print("  checked: every 202 has its row" if report["ok"] else "  FAILED: a 202 without its row")
    return report
