"""The sender (`celery -A config worker --sender`, the image's `sender`): a real worker process on the
run's broker consumes the connector's events' queue and no other, in threads of its own.

The tasks published are `core.worker_ping` (it answers with a result and touches nothing), each sent
to a queue by name: the sender runs the one on the events' queue; the ones on the order runs' queue
and the default queue wait there for a worker that consumes every queue.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import celery.exceptions
import pytest

from tests.helpers.queues import args_taken
from tests.helpers.waiting import wait_for
from tests.helpers.workers import database_url, node_name

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def sender_start(log: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """The sender as `bin/entrypoint sender` runs it (`--sender`, a node name of its own), on the run's
    database, broker and default queue; its relays off (they would hand this test's database's rows out)."""
    node = f"sender-{node_name()}@{socket.gethostname()}"  # Celery's %h
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url(),
        "INBOX_RELAY_INTERVAL": "0",
        "CONNECTOR_RELAY_INTERVAL": "0",
    }
    argv = [sys.executable, "-m", "celery", "-A", "config", "worker", "--sender", "-n", node, "-l", "INFO"]
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*argv, *extra], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    return process, node


def sender_stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)  # a warm shutdown, as a container's stop
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def ready(node: str, log: Path) -> str:
    """The sender's start-up lines, once it says it is ready (the test fails with its log otherwise)."""
    wait_for(lambda: f"{node} ready." in log.read_text(), timeout=60, message=lambda: log.read_text()[-3000:])
    return log.read_text()


def pool_size(node: str) -> int | None:
    """The threads of the node's pool as its remote control says (None on a broker without one: the
    local SQLite broker has no broadcast)."""
    from config.celery import app

    with app.connection_for_read() as conn:
        if "fanout" not in conn.transport.implements.exchange_type:
            return None
    return app.control.inspect(destination=[node], timeout=5).stats()[node]["pool"]["max-concurrency"]


def test_the_sender_runs_the_events_tasks_and_leaves_the_runs_and_the_default_queue_s(tmp_path, settings):
    from config.celery import app, queue_of
    from partner.core.tasks import worker_ping

    default = app.conf.task_default_queue
    events, runs = queue_of(default, "events"), queue_of(default, "runs")
    log = tmp_path / "sender.log"
    process, node = sender_start(log)
    try:
        started = ready(node, log)
        # What it consumes, as its banner lists it: the events' queue alone.
        banner = started[started.index("[queues]") : started.index("[tasks]")]
        assert re.findall(r"\.> (\S+) ", banner) == [events]
        # Its threads: CONNECTOR_SENDS_IN_FLIGHT, not the workers' (64; 4 in the test settings).
        assert ".> concurrency: 8 (thread)" in started and settings.CONNECTOR_SENDS_IN_FLIGHT == 8
        assert pool_size(node) in (8, None)

        args_taken(runs), args_taken(default)  # an earlier test's leftovers in this run's queues
        left = {queue: uuid.uuid4().hex for queue in (runs, default)}
        waiting = {queue: worker_ping.apply_async(args=[token], queue=queue) for queue, token in left.items()}
        token = uuid.uuid4().hex
        assert worker_ping.apply_async(args=[token], queue=events).get(timeout=30)["token"] == token
        for result in waiting.values():
            with pytest.raises(celery.exceptions.TimeoutError):
                result.get(timeout=2)
    finally:
        sender_stop(process)
    # Still there, for a worker that consumes every queue.
    assert {queue: args_taken(queue) for queue in left} == {queue: [[token]] for queue, token in left.items()}


def test_a_concurrency_given_on_the_command_line_wins(tmp_path):
    log = tmp_path / "sender.log"
    process, node = sender_start(log, "--concurrency", "3")
    try:
        assert ".> concurrency: 3 (thread)" in ready(node, log)
        assert pool_size(node) in (3, None)
    finally:
        sender_stop(process)
