"""The local broker under load: kombu's filesystem transport against the SQLite one (the default).

    .venv/bin/python bench/broker_local.py                       # everything, about 4 minutes
    .venv/bin/python bench/broker_local.py --only reader_race,half_written   # the probes, 30 s
    .venv/bin/python bench/broker_local.py --tasks 500 --only sqlite,sqlite_killed

Needs no server; too long for `bench/run.py`'s run, so on its own. Figures go to
bench/results/broker_local.json; everything a run creates is under var/bench/broker_local/<run>/.

- `reader_race` (both transports): two processes publish through kombu (2 x 2,000 messages of
  4 KB) while one consumer takes them as fast as it can, as a worker does when it keeps up with
  its publishers. `read_errors` is what that consumer could not decode: on the filesystem
  transport a message file is created, then written, so the consumer can read it empty or half
  written (and the file is gone: `lost`).
- `half_written` (filesystem): a real worker is handed such a file: does it survive? (On SQLite a
  message is a row, seen only once its transaction has committed: there is no such file.)
- `filesystem`, `sqlite`: a real worker, the Procfile's (`celery worker -B --pool=prefork
  --concurrency=2`), consumes while two publisher processes (the web) send N trivial tasks between
  them and the worker's beat sends one every half second. Each task appends its number to a file
  (O_APPEND: whole lines), so afterwards we count what ran: `lost` (published, never ran) and
  `duplicated` (ran more than once). A worker that exits by itself has crashed: counted, its last
  words kept, and started again so the run goes on. `tasks_per_s` is from the first publish to the
  last task run; both transports poll an empty queue once a second (kombu's virtual transports).
- `sqlite_killed`: the same, and once half the tasks ran, tasks slow down (0.5 s) so that both
  children are mid-task, and the whole worker is killed (SIGKILL, main process and children); a new
  one is started. `lost` is what the killed worker held; `broker_file` says where those messages
  are and whether the file is intact (PRAGMA integrity_check).

The processes use the project's Celery configuration (config/settings/base.py with DJANGO_DEBUG on:
the transport options, acks late, prefetch 1) plus this module's two tasks: this module is the
Celery app they load (`celery -A bench.broker_local`), configured from BROKER_LOCAL_DIR and
BROKER_LOCAL_TRANSPORT.
"""

import argparse
import base64
import collections
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RUNS_DIR = ROOT / "var" / "bench" / "broker_local"
RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable
TRANSPORTS = ("filesystem", "sqlite")
RUNS = ("reader_race", "half_written", "filesystem", "sqlite", "sqlite_killed")
QUEUE = "celery"  # the project's default queue, which the settings prepare on a new SQLite file
# In the killed run, tasks take this long around the kill, so that the worker dies holding some.
SLOW_TASK_SECONDS = 0.5
# What a worker log says when it goes wrong.
LOG_PATTERNS = {
    "unrecoverable": "Unrecoverable error",
    "json_decode_error": "JSONDecodeError",
    "database_locked": "database is locked",
    "operational_error": "OperationalError",
    "connection_lost": "Connection to broker lost",
    "traceback": "Traceback",
}


# The Celery app of the worker and publisher processes ------------------------------------------


def _append(path: Path, line: str) -> None:
    """One write with O_APPEND: concurrent lines never interleave."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, line.encode())
    finally:
        os.close(descriptor)


def _celery_app(run_dir: Path, transport: str):
    from celery import Celery

    app = Celery("broker_local")
    app.config_from_object("django.conf:settings", namespace="CELERY")
    if transport == "filesystem":
        # The folders the filesystem default had (config/settings/base.py before the SQLite one).
        folders = {name: run_dir / "broker" / name for name in ("queue", "processed", "control")}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=True)
        app.conf.broker_transport_options = {
            "data_folder_in": str(folders["queue"]),
            "data_folder_out": str(folders["queue"]),
            "processed_folder": str(folders["processed"]),
            "control_folder": str(folders["control"]),
            "store_processed": False,
        }
    app.conf.update(
        task_default_queue=QUEUE,
        task_ignore_result=True,
        beat_schedule={"tick": {"task": "bench.tick", "schedule": 0.5}},
        beat_schedule_filename=str(run_dir / "celerybeat-schedule"),
        worker_hijack_root_logger=True,  # no django.setup() here: Celery's own log lines
    )

    @app.task(name="bench.record")
    def record(number: int, padding: str = "") -> None:
        if (run_dir / "slow").exists():  # the killed run: tasks long enough to be killed mid-way
            time.sleep(SLOW_TASK_SECONDS)
        _append(run_dir / "ran.log", f"{number} {os.getpid()}\n")

    @app.task(name="bench.tick")
    def tick() -> None:
        _append(run_dir / "ticks.log", f"{time.time():.3f}\n")

    return app


app = (
    _celery_app(Path(os.environ["BROKER_LOCAL_DIR"]), os.environ["BROKER_LOCAL_TRANSPORT"])
    if "BROKER_LOCAL_DIR" in os.environ
    else None
)


def publish(first: int, count: int, payload: int, rate: float) -> dict:
    """Publisher process: send tasks first..first+count-1 (`rate` a second, 0: at once); what went
    out and what failed."""
    padding = "x" * payload
    policy = app.conf.task_publish_retry_policy
    failed, kinds = [], collections.Counter()
    started = time.monotonic()
    for number in range(first, first + count):
        if rate:
            time.sleep(max(0.0, started + (number - first) / rate - time.monotonic()))
        try:
            app.send_task("bench.record", args=[number, padding], retry=True, retry_policy=policy)
        except Exception as exc:  # counted, as the application's enqueue would log it
            failed.append(number)
            kinds[type(exc).__name__] += 1
    return {"seconds": time.monotonic() - started, "failed": failed, "error_kinds": dict(kinds)}


# The orchestrator -------------------------------------------------------------------------------


def broker_url(transport: str, run_dir: Path) -> str:
    return "filesystem://" if transport == "filesystem" else f"sqla+sqlite:///{run_dir / 'broker.sqlite3'}"


def process_env(transport: str, run_dir: Path) -> dict:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO_", "CELERY_", "DATABASE_URL", "CACHE_URL", "BROKER_LOCAL_"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.base",
        DJANGO_READ_DOT_ENV_FILE="false",
        DJANGO_DEBUG="true",
        CELERY_BROKER_URL=broker_url(transport, run_dir),
        # The worker never asks for results: keep them out of the way of the broker.
        CELERY_RESULT_BACKEND=f"file://{run_dir}",
        BROKER_LOCAL_DIR=str(run_dir),
        BROKER_LOCAL_TRANSPORT=transport,
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def worker_start(env: dict, run_dir: Path, number: int) -> subprocess.Popen:
    log = (run_dir / f"worker-{number}.log").open("wb")
    argv = [PYTHON, "-m", "celery", "-A", "bench.broker_local", "worker", "-B", "--pool=prefork", "--concurrency=2"]
    argv += ["--loglevel=WARNING", "--hostname", f"bench{number}@%h"]
    popen = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()
    return popen


def publisher_start(env: dict, first: int, count: int, payload: int, rate: float = 0) -> subprocess.Popen:
    argv = [PYTHON, str(Path(__file__)), "--publish", str(first), str(count), "--payload", str(payload)]
    argv += ["--rate", str(rate)]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)


def ran_numbers(run_dir: Path) -> collections.Counter:
    try:
        lines = (run_dir / "ran.log").read_text().splitlines()
    except FileNotFoundError:
        return collections.Counter()
    return collections.Counter(int(line.split()[0]) for line in lines if line.strip())


def group_kill(popen: subprocess.Popen, sig: int = signal.SIGKILL, timeout: float = 30) -> None:
    try:
        os.killpg(popen.pid, sig)
        popen.wait(timeout=timeout)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(popen.pid, signal.SIGKILL)
        popen.wait(timeout=10)


def worker_stop(popen: subprocess.Popen) -> None:
    """A warm shutdown: SIGTERM to the main process only (children signalled too can die holding the
    pool's queue lock, and the main process then never exits); SIGKILL to all after 30 s."""
    try:
        os.kill(popen.pid, signal.SIGTERM)
        popen.wait(timeout=30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        group_kill(popen)


def wait_for(predicate, timeout: float, what: str, worker: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{what}: worker exited or timed out:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)


def log_counts(run_dir: Path) -> dict:
    counts = dict.fromkeys(LOG_PATTERNS, 0)
    for log in sorted(run_dir.glob("worker-*.log")):
        text = log.read_text(errors="replace")
        for key, pattern in LOG_PATTERNS.items():
            counts[key] += text.count(pattern)
    return counts


def crash_words(log: Path) -> str:
    """The line a crashed worker's log explains itself with."""
    text = log.read_text(errors="replace")
    found = re.findall(r"^.*Unrecoverable error.*$", text, flags=re.MULTILINE)
    found = found or re.findall(r"^.*Error:.*$", text, flags=re.MULTILINE)
    return (found[-1] if found else text[-300:]).strip()[:300]


def sqlite_state(run_dir: Path, never_ran: set[int]) -> dict:
    """The broker file after the run: intact? what is still queued, and where the lost ones are."""
    path = run_dir / "broker.sqlite3"
    with sqlite3.connect(path) as db:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        journal = db.execute("PRAGMA journal_mode").fetchone()[0]
        rows = db.execute("SELECT visible, payload FROM kombu_message").fetchall()
    queued = taken_never_ran = 0
    for visible, payload in rows:
        message = json.loads(payload)
        if message.get("headers", {}).get("task") != "bench.record":
            continue
        number = json.loads(base64.b64decode(message["body"]))[0][0]
        if visible:
            queued += 1
        elif number in never_ran:
            taken_never_ran += 1  # delivered to a worker that died holding it
    return {
        "integrity_check": integrity,
        "journal_mode": journal,
        "rows": len(rows),
        "still_queued": queued,
        "lost_taken_by_a_dead_worker": taken_never_ran,
    }


def run(transport: str, *, tasks: int, payload: int, rate: float, kill: bool, settle: float) -> dict:
    """Run `tasks` through a real worker on `transport`; the figures."""
    name = f"{transport}_killed" if kill else transport
    run_dir = RUNS_DIR / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    env = process_env(transport, run_dir)
    workers = [worker_start(env, run_dir, 1)]
    crashes, kills, kill_detail = [], 0, {}

    # Warm-up: one task through, so the clock starts with a worker that consumes.
    publisher_start(env, -1, 1, payload).communicate(timeout=120)
    wait_for(lambda: -1 in ran_numbers(run_dir), 120, "warm-up", workers[-1], run_dir / "worker-1.log")
    ticks_before = len((run_dir / "ticks.log").read_text().splitlines()) if (run_dir / "ticks.log").exists() else 0

    started = time.monotonic()
    half = tasks // 2
    publishers = [
        publisher_start(env, first, number, payload, rate) for first, number in ((0, half), (half, tasks - half))
    ]
    outputs = {}
    last_count, last_progress = 0, time.monotonic()
    while True:
        time.sleep(0.1)
        ran = ran_numbers(run_dir)
        done = sum(1 for number in ran if number >= 0)
        now = time.monotonic()
        if done != last_count:
            last_count, last_progress = done, now
        for index, publisher in enumerate(publishers):
            if index not in outputs and publisher.poll() is not None:
                outputs[index] = json.loads(publisher.stdout.read())
        worker = workers[-1]
        if kill and not kills and done >= tasks // 2:
            # Tasks slow down, so both children are mid-task when the whole worker is killed.
            (run_dir / "slow").touch()
            time.sleep(3 * SLOW_TASK_SECONDS)
            group_kill(worker)
            (run_dir / "slow").unlink()
            kills += 1
            kill_detail = {"ran_before_kill": sum(1 for n in ran_numbers(run_dir) if n >= 0)}
            kill_detail["killed_after_s"] = round(time.monotonic() - started, 2)
            workers.append(worker_start(env, run_dir, len(workers) + 1))
        elif worker.poll() is not None:
            log = run_dir / f"worker-{len(workers)}.log"
            crashes.append({"after_s": round(now - started, 2), "exit": worker.returncode, "said": crash_words(log)})
            workers.append(worker_start(env, run_dir, len(workers) + 1))
        if len(outputs) == len(publishers) and (done >= tasks or now - last_progress > settle):
            break
    finished = last_progress
    worker_stop(workers[-1])

    ran = ran_numbers(run_dir)
    failed = {number for output in outputs.values() for number in output["failed"]}
    published = set(range(tasks)) - failed
    never_ran = published - set(ran)
    publish_seconds = max(output["seconds"] for output in outputs.values())
    kinds = collections.Counter()
    for output in outputs.values():
        kinds.update(output["error_kinds"])
    ticks = (
        len((run_dir / "ticks.log").read_text().splitlines()) - ticks_before if (run_dir / "ticks.log").exists() else 0
    )
    result = {
        "broker": broker_url(transport, run_dir.relative_to(ROOT)),
        "tasks": tasks,
        "payload_bytes": payload,
        "rate_per_publisher": rate or "unpaced",
        "publish_per_s": round(tasks / publish_seconds, 1),
        "tasks_per_s": round(len(published & set(ran)) / max(finished - started, 1e-9), 1),
        "seconds": round(finished - started, 2),
        "publish_errors": len(failed),
        "publish_error_kinds": dict(kinds),
        "worker_crashes": len(crashes),
        "crashes": crashes[:5],
        "lost": len(never_ran),
        "duplicated": sum(count - 1 for number, count in ran.items() if number >= 0 and count > 1),
        "beat_ticks": ticks,
        "log": log_counts(run_dir),
    }
    if kill:
        result["kill"] = {**kill_detail, "lost_numbers": sorted(never_ran)[:20]}
    if transport == "sqlite":
        result["broker_file"] = sqlite_state(run_dir, never_ran)
    return result


# Probes: what a consumer can read, at the transport's level ------------------------------------


def _race_broker(transport: str, folder: Path) -> tuple[str, dict]:
    """A broker URL and transport options for the probes, in `folder`: the settings' for SQLite."""
    from partner.core import brokers

    if transport == "filesystem":
        (folder / "queue").mkdir(parents=True, exist_ok=True)
        (folder / "control").mkdir(parents=True, exist_ok=True)
        queue = str(folder / "queue")
        return "filesystem://", {
            "data_folder_in": queue,
            "data_folder_out": queue,
            "control_folder": str(folder / "control"),
            "store_processed": False,
        }
    path = folder / "broker.sqlite3"
    url, options = brokers.sqlite_broker_url(path), brokers.sqlite_broker_options(path)
    brokers.sqlite_broker_prepare(url, options, queue="race")
    return url, options


def _race_put(transport: str, folder: str, count: int, size: int) -> None:
    from kombu import Connection

    url, options = _race_broker(transport, Path(folder))
    with Connection(url, transport_options=options) as connection:
        queue = connection.SimpleQueue("race")  # a producer's publish, as Celery's
        for number in range(count):
            queue.put({"number": number, "padding": "x" * size})


def reader_race(transport: str, *, messages: int, size: int) -> dict:
    """Two processes put messages straight through kombu while this one takes them as fast as it
    can: a consumer that keeps up with its publishers, where the filesystem transport lets it
    read a message file before its writer has written it."""
    import multiprocessing
    from queue import Empty

    from kombu import Connection

    folder = RUNS_DIR / f"{transport}_race"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    url, options = _race_broker(transport, folder)
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_race_put, args=(transport, str(folder), messages, size)) for _ in range(2)]
    read, errors, idle_since = 0, collections.Counter(), None
    with Connection(url, transport_options=options) as connection:
        channel = connection.default_channel
        for writer in writers:
            writer.start()
        while read + sum(errors.values()) < 2 * messages:
            try:
                channel._get("race")
            except Empty:
                done = not any(writer.is_alive() for writer in writers)
                idle_since = idle_since or time.monotonic()
                if done and time.monotonic() - idle_since > 2:
                    break
                continue
            except Exception as exc:  # what a worker's consumer would die of
                errors[type(exc).__name__] += 1
                continue
            read, idle_since = read + 1, None
    for writer in writers:
        writer.join()
    return {
        "messages": 2 * messages,
        "bytes_each": size,
        "read": read,
        "read_errors": dict(errors),
        "lost": 2 * messages - read,
    }


def half_written(transport: str) -> dict:
    """A worker handed what the reader race shows: a message file cut in half in its queue."""
    if transport != "filesystem":
        return {"applies": False, "why": "a message is a row, visible only once its transaction has committed"}
    from kombu import Connection

    folder = RUNS_DIR / "filesystem_half_written"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = process_env(transport, folder)
    worker = worker_start(env, folder, 1)
    publisher_start(env, -1, 1, 0).communicate(timeout=120)
    wait_for(lambda: -1 in ran_numbers(folder), 120, "warm-up", worker, folder / "worker-1.log")
    # A real task message, written by kombu elsewhere, then half of it placed in the worker's queue.
    url, options = _race_broker(transport, folder / "scratch")
    with Connection(url, transport_options=options) as connection:
        connection.default_channel._put(QUEUE, {"body": "x" * 2000, "headers": {"task": "bench.record"}})
    whole = next((folder / "scratch" / "queue").iterdir())
    half = whole.read_bytes()[: whole.stat().st_size // 2]
    (folder / "broker" / "queue" / whole.name).write_bytes(half)
    deadline = time.monotonic() + 15
    while worker.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    survived = worker.poll() is None
    worker_stop(worker)
    return {
        "applies": True,
        "worker_survived": survived,
        "said": "" if survived else crash_words(folder / "worker-1.log"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The local broker under load: filesystem against SQLite")
    parser.add_argument("--tasks", type=int, default=2000, help="tasks per worker run, from two publishers")
    parser.add_argument("--only", default=",".join(RUNS), help="comma-separated, of: " + ", ".join(RUNS))
    parser.add_argument("--payload", type=int, default=0, help="bytes of padding in each task's arguments")
    parser.add_argument("--rate", type=float, default=0, help="tasks a second per publisher (0: as fast as it can)")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds with no task run before giving up")
    parser.add_argument("--race-messages", type=int, default=2000, help="reader race: messages per writer")
    parser.add_argument("--race-bytes", type=int, default=4000, help="reader race: bytes of each message")
    parser.add_argument("--publish", nargs=2, type=int, metavar=("FIRST", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.publish:
        print(json.dumps(publish(*args.publish, args.payload, args.rate)))
        return 0

    results = {}
    for name in args.only.split(","):
        if name not in RUNS:
            parser.error(f"unknown run {name!r}: one of {', '.join(RUNS)}")
        print(f"broker_local: {name} ...", flush=True)
        if name in ("reader_race", "half_written"):
            probe = reader_race if name == "reader_race" else half_written
            options = {"messages": args.race_messages, "size": args.race_bytes} if name == "reader_race" else {}
            results[name] = {transport: probe(transport, **options) for transport in TRANSPORTS}
        else:
            transport, _, killed = name.partition("_")
            results[name] = run(
                transport, tasks=args.tasks, payload=args.payload, rate=args.rate, kill=bool(killed), settle=args.settle
            )
        print(json.dumps(results[name], indent=2), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "broker_local.json").write_text(json.dumps(results, indent=2))
    print(f"written: {RESULTS / 'broker_local.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
