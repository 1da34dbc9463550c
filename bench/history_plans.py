"""EXPLAIN of every statement the periodic jobs sent, on the seeded database: index scan or sequential scan.

`plans_explain(captured)` takes, per job, the statements Django sent in one run of it (SQL and
parameters, caught by an execute wrapper in `bench/history_probe.py`), runs `EXPLAIN (ANALYZE,
BUFFERS)` on each distinct one inside a transaction that is rolled back (an UPDATE or DELETE changes
nothing), and says for each which scans its plan uses. A sequential scan of one of the history's
tables (`BIG_TABLES`) is a finding; one of a small table (the catalog, the reconciliation's state
row) is what the planner should do.
"""

import re

BIG_TABLES = {
    "inbox_notification",
    "fulfillment_order",
    "fulfillment_orderstep",
    "fulfillment_orderdocument",
    "fulfillment_delivery",
}
SCAN = re.compile(
    r"(?P<kind>Seq Scan|Index Scan Backward|Index Scan|Index Only Scan Backward|Index Only Scan|Bitmap Index Scan|"
    r"Bitmap Heap Scan)(?: using (?P<index>\S+))? on (?P<target>\S+)"
)
EXECUTION = re.compile(r"Execution Time: (?P<ms>[0-9.]+) ms")
WRITES_AND_READS = ("SELECT", "UPDATE", "DELETE", "INSERT", "WITH")


SLOW_MS = 1.0  # a statement this slow keeps its whole plan in the result, whatever its scans
FULL_WALK_ROWS = 10_000  # an index walked with no condition, filtering out this many rows: a scan in disguise
_DETAIL_ENDS = ("->", "SubPlan", "InitPlan", "Planning", "Execution", "Worker ")


def scans_of(plan: list[str]) -> list[dict]:
    """Every scan node of a text plan: kind, table (or index, for a bitmap index scan), index, whether it
    ran, whether it had an index condition, and the rows its filter removed (over all its loops)."""
    found = []
    for number, line in enumerate(plan):
        match = SCAN.search(line)
        if not match:
            continue
        loops = re.search(r"loops=(\d+)\)", line)
        scan = {
            "kind": match["kind"],
            "on": match["target"],
            "index": match["index"],
            "executed": "never executed" not in line,
            "condition": match["kind"] == "Bitmap Index Scan",
            "removed": 0,
        }
        for detail in plan[number + 1 :]:
            text = detail.strip()
            if text.startswith(_DETAIL_ENDS):
                break
            if text.startswith(("Index Cond:", "Recheck Cond:")) and not text.endswith("IS NOT NULL)"):
                scan["condition"] = True  # "x IS NOT NULL" alone (a MIN/MAX through the index) bounds nothing
            elif text.startswith("Rows Removed by Filter:"):
                scan["removed"] = int(text.rsplit(":", 1)[1]) * (int(loops[1]) if loops else 1)
        found.append(scan)
    return found


def verdict_of(scans: list[dict]) -> str:
    """ "SEQ SCAN on ..." or "FULL INDEX WALK on ..." (a history table read whole), else "index" or
    "no history table read". A scan the executor never ran is not counted."""
    ran = [scan for scan in scans if scan["executed"] and scan["on"] in BIG_TABLES]
    seq = sorted({scan["on"] for scan in ran if scan["kind"] == "Seq Scan"})
    walks = sorted(
        {
            f"{s['on']} ({s['index']})"
            for s in ran
            if "Index" in s["kind"] and not s["condition"] and s["removed"] >= FULL_WALK_ROWS
        }
    )
    found = (["SEQ SCAN on " + ", ".join(seq)] if seq else []) + (
        ["FULL INDEX WALK on " + ", ".join(walks)] if walks else []
    )
    if found:
        return "; ".join(found)
    if any("Index" in scan["kind"] for scan in scans if scan["executed"]):
        return "index"
    return "no history table read"


def plan_is_finding(verdict: str) -> bool:
    return verdict.startswith(("SEQ", "FULL"))


def _label(scan: dict) -> str:
    text = f"{scan['kind']} {scan['index'] + ' on ' if scan['index'] else ''}{scan['on']}"
    if not scan["executed"]:
        return text + " (never executed)"
    return text + (f" ({scan['removed']} rows filtered out)" if scan["removed"] else "")


def _explain(sql: str, params) -> list[str]:
    from django.db import connection, transaction

    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
            plan = [row[0] for row in cursor.fetchall()]
        transaction.set_rollback(True)
    return plan


def plans_explain(captured: dict[str, list]) -> list[dict]:
    """One entry per distinct statement of each job: its head, the plan's top line, scans, verdict."""
    explained, seen = [], set()
    for job, statements in captured.items():
        for sql, params in statements:
            if sql.lstrip().split(None, 1)[0].upper() not in WRITES_AND_READS or (job, sql) in seen:
                continue
            seen.add((job, sql))
            try:
                plan = _explain(sql, params)
            except Exception as exc:  # a statement EXPLAIN cannot take is reported, not fatal
                explained.append({"job": job, "statement": sql[:300], "error": f"{type(exc).__name__}: {exc}"})
                continue
            scans = scans_of(plan)
            timing = next((EXECUTION.search(line) for line in plan if EXECUTION.search(line)), None)
            entry = {
                "job": job,
                "statement": " ".join(sql.split())[:300],
                "top": plan[0].strip(),
                "scans": [_label(scan) for scan in scans],
                "execution_ms": float(timing["ms"]) if timing else None,
                "verdict": verdict_of(scans),
            }
            if plan_is_finding(entry["verdict"]) or (entry["execution_ms"] or 0) >= SLOW_MS:
                entry["plan"] = plan
            explained.append(entry)
    return explained
