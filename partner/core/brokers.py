"""Broker URLs: which ones need no server, and the SQLite broker of local runs.

Local runs (`make run`, and the test suite when no Redis answers) use kombu's SQLAlchemy transport
on one SQLite file: no server to install, and a message is a row written in one transaction, so a
worker never reads half of one. The filesystem transport, the earlier default, creates a message's
file and only then writes it: a worker that lists the folder in between reads it empty or half
written, kombu raises JSONDecodeError, the worker logs "Unrecoverable error" and stops (and the
message is gone) (docs/performance.md says what was measured).

A broker that needs no server lives in one process or on one machine's disk, so production refuses
it: at start (`config/settings/production.py`) and in the preflight (partner.E003,
`partner/core/checks.py`), both through `broker_url_serverless`.

Imported by the settings, which only name the broker: nothing of Django here, and kombu and SQLAlchemy
only when a local broker is used. Its file and tables are made when a process's Celery app is
configured (`sqlite_broker_prepare`, called by `config/celery.py`), never when settings are read.
"""

import fcntl
import sqlite3
from pathlib import Path

# Kombu transports that run inside the process or on one machine's disk, with no server.
SERVERLESS_TRANSPORTS = ("filesystem", "memory")
SQLALCHEMY_TRANSPORTS = ("sqla", "sqlalchemy")
SQLITE_BROKER_SCHEME = "sqla+sqlite"
# How long a process waits for another's write to the broker file before the operation fails
# (a write holds the file for a millisecond or two; kombu reports a timeout as a lost connection).
SQLITE_BUSY_TIMEOUT = 15.0


def _serverless(url: str) -> bool:
    scheme = url.strip().split("://", 1)[0].lower()
    transport, _, database = scheme.partition("+")
    if transport in SQLALCHEMY_TRANSPORTS:
        return database.startswith("sqlite")
    return transport in SERVERLESS_TRANSPORTS


def broker_url_serverless(url: str) -> bool:
    """Whether a broker URL, or one of its failover URLs (`;`-separated), needs no server."""
    return any(_serverless(part) for part in str(url or "").split(";") if part.strip())


def sqlite_broker_url(path: Path) -> str:
    return f"{SQLITE_BROKER_SCHEME}:///{path}"


def sqlite_broker_path(url: str) -> Path | None:
    """The file of a `sqla+sqlite:///path` URL (relative to the working directory, as SQLAlchemy
    reads it), or None for another URL or an in-memory database."""
    prefix = f"{SQLITE_BROKER_SCHEME}:///"
    if not url.lower().startswith(prefix):
        return None
    name = url[len(prefix) :].split("?", 1)[0]
    return Path(name) if name and name != ":memory:" else None


class SqliteBrokerConnect:
    """Opens the broker file for kombu's SQLAlchemy transport (SQLAlchemy's `creator`).

    WAL: readers never wait for the writer, and a commit appends to the log instead of rewriting
    the file. synchronous=NORMAL: a commit survives the death of any process; only a power cut can
    take back the last ones (never corrupting the file), which a local queue can afford for
    several times the throughput of an fsync per message. The busy timeout makes concurrent
    writers (web, worker, beat, the worker's children) queue up instead of failing at once.
    """

    def __init__(self, path: Path, busy_timeout: float = SQLITE_BUSY_TIMEOUT):
        self.path = str(path)
        self.busy_timeout = busy_timeout

    def __call__(self) -> sqlite3.Connection:
        # Not tied to its thread: SQLAlchemy decides which thread uses a connection.
        connection = sqlite3.connect(self.path, timeout=self.busy_timeout, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    def __repr__(self) -> str:
        return f"SqliteBrokerConnect({self.path!r})"


def sqlite_broker_options(path: Path) -> dict:
    """Kombu transport options (SQLAlchemy engine arguments) of the SQLite broker at `path`.

    No connection pool: a connection is opened for each operation and closed after it, so no
    SQLite connection is ever inherited by a forked process (the worker's children, beat), which
    SQLite forbids; opening one costs well under a millisecond.
    """
    from sqlalchemy.pool import NullPool

    return {"creator": SqliteBrokerConnect(path), "poolclass": NullPool}


def _sqlite_broker_ready(path: Path, queue: str) -> bool:
    if not path.is_file():
        return False
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=SQLITE_BUSY_TIMEOUT) as db:
            return db.execute("SELECT 1 FROM kombu_queue WHERE name = ?", (queue,)).fetchone() is not None
    except sqlite3.Error:
        return False


def sqlite_broker_prepare(url: str, transport_options: dict, queue: str) -> None:
    """Create the broker file, kombu's tables and `queue`'s row, one process at a time.

    Kombu creates them on first use, and processes that do so at once on a new file collide ("table
    already exists", or the queue's unique name): the loser's channel is left unusable (its session
    waits for a rollback kombu never makes), which stops a worker. Done when each process's Celery app
    is configured, under a lock and only while missing, it leaves nothing to race: the processes then
    only read them. Nothing for another broker's URL.

    A file that cannot be made (a bad path, a full disk) does not stop the process: the broker's
    first use fails with the cause, and /healthz reports the broker down.
    """
    path = sqlite_broker_path(url)
    if path is None or _sqlite_broker_ready(path, queue):
        return
    from kombu import Connection
    from sqlalchemy.exc import SQLAlchemyError

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_name(f"{path.name}.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
            if _sqlite_broker_ready(path, queue):
                return
            with Connection(url, transport_options=transport_options) as connection:
                # As Celery declares it (see partner/core/health.py).
                connection.default_channel.queue_declare(queue, durable=True, auto_delete=False)
    except (OSError, sqlite3.Error, SQLAlchemyError):
        return
