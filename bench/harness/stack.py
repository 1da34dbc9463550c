"""The processes a benchmark runs against (bench/README.md, its variables): the bench database and Redis
databases, gunicorn and Celery, their CPU and memory from /proc, and this process configured as theirs."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpers.ports import free_port, port_answers
from tests.helpers.processes import PRODUCTION

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(os.environ.get("BENCH_RESULTS_DIR", ROOT / "bench" / "results"))
LOGS = Path(os.environ.get("BENCH_LOGS_DIR", ROOT / "var" / "bench"))
PYTHON = sys.executable
VENV_BIN = Path(PYTHON).parent
# The environment before a benchmark configured Django here (in os.environ): a run in its own process gets it.
ENVIRON_AT_START = dict(os.environ)

PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379")
DB_NAME = os.environ.get("BENCH_DB_NAME", "bench_partner")
BROKER_DB, CACHE_DB = (int(number) for number in os.environ.get("BENCH_REDIS_DBS", "10,11").split(","))
# What the preflight refuses to start without (partner.E013, E015): a company not the demo's, and the
# documents on one machine's disk (every "host" of the drills reads one MEDIA_ROOT).
COMPANY = {key: value for key, value in PRODUCTION.items() if key.startswith(("PARTNER_", "DOCUMENTS_SINGLE"))}
SIGNING_SECRET = "bench-webhook-signing-secret"  # noqa: S105 - a benchmark's own, not a real secret
# The settings of the processes that call the sandbox on the loopback (bench/harness/settings.py).
SETTINGS = "bench.harness.settings"


class NotAnswering(SystemExit):
    """PostgreSQL or Redis is not there: the benchmark cannot run."""


def until(done, *, timeout: float, interval: float = 0.2):
    """`done()`'s first truthy answer, asked every `interval` seconds (None after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := done():
            return found
        time.sleep(interval)
    return None


def services_check() -> None:
    """Refuse clearly unless PostgreSQL and Redis both answer (a real query, not only the port)."""
    import psycopg
    import redis

    problems = []
    for name, url, ask in (
        ("PostgreSQL", PG_URL, lambda: psycopg.connect(PG_URL, connect_timeout=3).close()),
        ("Redis", REDIS_URL, lambda: redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()),
    ):
        try:
            ask()
        except Exception as exc:
            at = urlsplit(url)  # its password left out
            where = f"{at.scheme}://{at.hostname or ''}:{at.port or ''}{at.path}"
            problems.append(f"{name} at {where} does not answer: {type(exc).__name__}: {exc}".strip())
    if problems:
        hint = "\nSet BENCH_PG_URL / BENCH_REDIS_URL if they live elsewhere."
        raise NotAnswering("make bench needs PostgreSQL and Redis:\n  " + "\n  ".join(problems) + hint)


def database_prepared() -> str:
    """The bench database dropped, created and migrated, the Redis databases flushed; the database's URL."""
    import psycopg

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB_NAME}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB_NAME}"')
    database = urlsplit(PG_URL)._replace(path=f"/{DB_NAME}").geturl()
    redis_flush()
    env = app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    manage("migrate", "--no-input", "-v", "0", env=env)
    return database


def redis_url(db: int) -> str:
    return f"{REDIS_URL.rstrip('/')}/{db}"


def redis_flush() -> None:
    import redis

    for db in (BROKER_DB, CACHE_DB):
        redis.Redis.from_url(redis_url(db)).flushdb()


def queue_length() -> int:
    import redis

    return int(redis.Redis.from_url(redis_url(BROKER_DB)).llen("celery"))


def app_env(
    *, database: str, public_base_url: str, sandbox: bool, settings: str = "config.settings.production", **extra
):
    """The environment of a web or worker process: production settings over plain HTTP."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": settings,
        "DJANGO_READ_DOT_ENV_FILE": "false",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "bench-secret-key-not-for-production-0123456789abcdef",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "FIELD_ENCRYPTION_KEYS": "YmVuY2gtZmllbGQta2V5LW5vdC1mb3ItcHJvZC0wMDA=",
        "SANDBOX_ENABLED": "true" if sandbox else "false",
        "DATABASE_URL": database,
        "CELERY_BROKER_URL": redis_url(BROKER_DB),
        "CELERY_RESULT_BACKEND": redis_url(BROKER_DB),
        "CACHE_URL": redis_url(CACHE_DB),
        "PUBLIC_BASE_URL": public_base_url,
        "SVC_BASE_URL": f"{public_base_url}/sandbox",
        "SVC_TOKEN_URL": f"{public_base_url}/sandbox/oauth2/v1/token",
        "SVC_SIGNING_SECRETS": SIGNING_SECRET,
        # The sandbox accepts the configured client, so one value serves both sides.
        "SVC_CLIENT_SECRET": "bench-client-secret-not-for-production",
        "LOG_LEVEL": "WARNING",
        "PYTHONDONTWRITEBYTECODE": "1",
        **COMPANY,
    }
    if not sandbox and settings != SETTINGS:
        # Processes that never call the service (the intake, memory and restart benchmarks): an https
        # address, as the production settings require at start (partner.E011).
        env["SVC_BASE_URL"] = "https://service.invalid"
        env["SVC_TOKEN_URL"] = "https://service.invalid/token"
    env.pop("DJANGO_CONFIGURATION", None)
    env.update({key: str(value) for key, value in extra.items()})
    return env


def manage(*args: str, env: dict, stdin: str | None = None, capture: bool = False) -> str:
    """`manage.py ARGS` (its output returned when `capture`)."""
    argv, out = [PYTHON, "manage.py", *args], subprocess.PIPE if capture else None
    return subprocess.run(argv, cwd=ROOT, env=env, input=stdin, text=True, check=True, stdout=out).stdout or ""


@dataclass
class Process:
    """A process group we started (gunicorn master and workers, or a Celery worker)."""

    name: str
    popen: subprocess.Popen
    log: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def pids(self) -> list[int]:
        """The main process and its descendants."""
        found, queue = [], [self.popen.pid]
        while queue:
            pid = queue.pop()
            found.append(pid)
            queue.extend(children(pid))
        return found

    def stop(self, timeout: float = 20) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)
        except ProcessLookupError:
            pass

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def children(pid: int) -> list[int]:
    """The child processes of `pid`, whichever of its threads forked them (a prefork pool's, say)."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):  # none when the process is gone
        with contextlib.suppress(OSError):
            found += [int(item) for item in task.read_text().split()]
    return found


def memory_kib(pid: int, field: str = "VmHWM") -> int | None:
    """A memory figure of a process in KiB (VmHWM: its peak resident set; VmRSS: now), None when it is gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in lines if line.startswith(f"{field}:")), None)


def cpu_seconds(pid: int, *, reaped: bool = False) -> float:
    """User plus system CPU time of a process so far (`reaped`: and that of the children it reaped)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(value) for value in fields[11 : 15 if reaped else 13]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds_of_command(command: str) -> float:
    """CPU time so far of every process whose name is `command` (PostgreSQL's backends, say)."""
    found = 0.0
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            found += cpu_seconds(int(comm.parent.name)) if comm.read_text().strip() == command else 0.0
    return found


def spawn(name: str, argv: list[str], env: dict, *, port: int | None = None, log: str = "") -> Process:
    """`argv` started in a process group of its own, its output in LOGS/`log` (`name` by default).log."""
    LOGS.mkdir(parents=True, exist_ok=True)
    path = LOGS / f"{log or name}.log"
    with path.open("wb") as out:
        popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    return Process(name=name, popen=popen, log=path, port=port)


def wait_port(process: Process, host: str = "127.0.0.1", port: int | None = None, timeout: float = 60) -> None:
    """Until `process` listens on `host`:`port` (its own port by default); it exiting meanwhile raises."""
    port = port or process.port

    def listening() -> bool:
        if process.popen.poll() is not None:
            raise RuntimeError(f"{process.name} exited ({process.popen.returncode}):\n{process.log_tail()}")
        return port_answers(port, host)

    if not until(listening, timeout=timeout, interval=0.1):
        raise RuntimeError(f"{process.name} did not listen on {host}:{port} within {timeout:g}s:\n{process.log_tail()}")


def gunicorn_start(name: str, app: str, env: dict, *, workers: int, threads: int = 1, port=None, access_log=None):
    """gunicorn on 127.0.0.1 with `workers` processes (gthread with `threads` > 1); its Process, listening."""
    port = port or free_port()
    argv = [str(VENV_BIN / "gunicorn"), app, "--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    argv += ["--backlog", "2048", "--keep-alive", "30", "--log-level", "warning"]
    if threads > 1:
        argv += ["--worker-class", "gthread", "--threads", str(threads)]
    if access_log is not None:
        argv += ["--access-logfile", str(access_log), "--access-logformat", "%(m)s %(U)s %(s)s"]
    process = spawn(name, argv, env, port=port)
    wait_port(process)
    return process


def celery_start(name: str, env: dict, *, concurrency: int | None, pool: str = "prefork", sender=False) -> Process:
    """`celery -A config worker` with `concurrency` slots of `pool` (prefork processes, threads); with
    `sender`, a sender (`--sender`: the events' queue only, its own threads when `concurrency` is None)."""
    argv = [PYTHON, "-m", "celery", "-A", "config", "worker", f"--pool={pool}"]
    argv += [f"--concurrency={concurrency}"] if concurrency else []
    argv += ["--sender"] if sender else []
    argv += ["--loglevel=WARNING", "--without-gossip", "--without-mingle", f"--hostname={node_name(name)}"]
    return spawn(name, argv, env)


def node_name(name: str) -> str:
    """The Celery node name of the worker `celery_start` starts as `name` (`%h`: this host's name)."""
    return f"{name}@{socket.gethostname()}"


def database_settled(database: str, query: str, *, timeout: float, interval: float) -> float | None:
    """Seconds until `query` (one value) answers true on one connection (None: not within `timeout`)."""
    import psycopg

    started = time.monotonic()
    with psycopg.connect(database, autocommit=True) as conn:
        settled = until(lambda: conn.execute(query).fetchone()[0], timeout=timeout, interval=interval)
    return round(time.monotonic() - started, 2) if settled else None


def in_own_process(module: str, *args: str) -> dict:
    """`python -m MODULE ARGS --output=FILE` with the environment the bench started with (the module
    configures Django for itself); the JSON report it wrote, or {"ok": False, "error": ...} if none."""
    with tempfile.TemporaryDirectory(prefix="pd-bench-") as folder:
        output = Path(folder) / "report.json"
        argv = [PYTHON, "-m", module, *args, f"--output={output}"]
        ran = subprocess.run(argv, cwd=ROOT, env=ENVIRON_AT_START, check=False)
        if not output.exists():
            return {"ok": False, "error": f"{module} exited ({ran.returncode}) without a report"}
        return json.loads(output.read_text())


def percentile(values: list[float], fraction: float) -> float | None:
    """The value at `fraction` (0 to 1) of `values` in order, nearest rank (None: no values)."""
    return sorted(values)[round(fraction * (len(values) - 1))] if values else None


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


# What this process takes from a server's environment when it is configured as they are.
_SHARED = ("DJANGO_", "FIELD_ENCRYPTION_KEYS", "SANDBOX_", "DATABASE_URL", "CELERY_", "CACHE_URL", "PUBLIC_BASE_URL")
_SHARED += ("SVC_", "LOG_LEVEL", "PARTNER_", "DOCUMENTS_SINGLE_HOST")


def django_setup(env: dict) -> None:
    """Configure this process like the servers of `env` (its database, cache, broker and addresses)."""
    import django
    from django.apps import apps

    if apps.ready:  # a later benchmark in the same process: the settings were read once
        from django.conf import settings

        for key in ("PUBLIC_BASE_URL", "SVC_BASE_URL", "SVC_TOKEN_URL"):
            setattr(settings, key, env[key])
        return
    os.environ.update({key: value for key, value in env.items() if key.startswith(_SHARED)})
    django.setup()


def worker_ready(timeout: float = 60, *, names: tuple[str, ...] = ()) -> None:
    """Until a Celery worker answers a ping (`celery inspect ping`); each of `names` (node names) when given."""
    from config.celery import app

    def answered() -> bool:
        replies = app.control.ping(timeout=0.5, destination=list(names) or None)
        return len(replies) >= max(1, len(names))

    if not until(answered, timeout=timeout, interval=0):
        raise RuntimeError(f"the Celery worker did not answer a ping: {', '.join(names) or 'none'}")


def cpu_of(*processes: Process) -> float:
    """User plus system CPU so far of every process of `processes` (and their descendants)."""
    return sum(cpu_seconds(pid) for process in processes for pid in process.pids())
