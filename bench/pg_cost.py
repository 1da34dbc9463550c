"""What a piece of work costs PostgreSQL and the processes around it, read from /proc and PostgreSQL's own counters.

Other benchmarks may share the machine: these readings count only the processes and the database
a run names, never the whole machine.

- `cpu_ns(pid)`: CPU time of one process in nanoseconds (`/proc/<pid>/schedstat`; `/proc/<pid>/stat`
  in clock ticks where schedstat is missing). Fine enough for a few milliseconds of work.
- `backends_cpu_ns(database)`: CPU of the PostgreSQL backends connected to one database (found in
  `pg_stat_activity`); a backend that ends between two readings takes its time with it, so the
  servers of a run keep their connections (DATABASE_CONN_MAX_AGE well beyond the run).
- `transactions(database)`: `xact_commit + xact_rollback` of one database (`pg_stat_database`): with
  Django in autocommit every statement outside `atomic()` is one transaction, so the difference over
  a phase where nothing else touches the database counts the statements the servers sent, the
  CONN_HEALTH_CHECKS `SELECT 1` included. Backends report these counters when idle, within about
  10 s (`stats_settle`).
"""

import os
import time
from pathlib import Path
from urllib.parse import urlsplit

from bench import stack

_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
STATS_FLUSH_SECONDS = 11.0  # PostgreSQL 15: an idle backend reports its counters within 10 s


def cpu_ns(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_NS
    except (OSError, ValueError, IndexError):
        return 0


def pids_cpu_ns(pids) -> int:
    return sum(cpu_ns(pid) for pid in pids)


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _admin():
    import psycopg

    return psycopg.connect(stack.PG_URL, autocommit=True)


def backend_pids(database: str) -> list[int]:
    """The PostgreSQL backends connected to `database` (a URL or a name) now."""
    with _admin() as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
            [database_name(database) if "://" in database else database],
        ).fetchall()
    return [pid for (pid,) in rows]


def backends_cpu_ns(database: str) -> dict[int, int]:
    """pid -> CPU so far of each backend of `database`; subtract two readings with `cpu_spent`."""
    return {pid: cpu_ns(pid) for pid in backend_pids(database)}


def cpu_spent(before: dict[int, int], after: dict[int, int]) -> int:
    """CPU between two `backends_cpu_ns` readings: backends present at the second one (new ones whole)."""
    return sum(value - before.get(pid, 0) for pid, value in after.items())


def transactions(database: str) -> int:
    with _admin() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        (count,) = conn.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
            [database_name(database) if "://" in database else database],
        ).fetchone()
    return int(count or 0)


def stats_settle() -> None:
    """Wait until idle backends have reported their counters."""
    time.sleep(STATS_FLUSH_SECONDS)


def per(amount_ns: float, count: int) -> float | None:
    """Nanoseconds over `count` things, in milliseconds each (3 decimals)."""
    return round(amount_ns / 1e6 / count, 3) if count else None
