"""A request never waits on the broker more than BROKER_PUBLISH_SECONDS: the on-commit publish of a
staff action waited on the broker's retries (about 19 s with it down, gunicorn's timeout is 30 s).
Tried against a broker that does not answer (a socket that accepts and never replies) and one that
is not there (a closed port), on each transport we run: Redis and RabbitMQ URLs."""

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from partner.core.enqueue import enqueue_after_commit, task_send
from tests.helpers.ports import free_port
from tests.helpers.workers import broker_point

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def silent_broker():
    """A listening socket that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.fixture
def pointed():
    from config.celery import app

    previous = app.conf.broker_write_url or app.conf.broker_url
    yield broker_point
    broker_point(previous)


@pytest.mark.parametrize("scheme", ["redis://127.0.0.1:{port}/0", "amqp://guest:guest@127.0.0.1:{port}//"])
def test_a_broker_that_never_answers_holds_a_publish_at_most_the_deadline(
    scheme, silent_broker, pointed, settings, caplog, django_capture_on_commit_callbacks
):
    settings.BROKER_PUBLISH_SECONDS = 1.0
    pointed(scheme.format(port=silent_broker))
    caplog.set_level(logging.WARNING, logger="partner.core.enqueue")
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        enqueue_after_commit("fulfillment.order_run", order_id=1)
    waited = time.monotonic() - started
    assert waited < 1.5, waited  # the deadline and the hook's own overhead; it was ~19 s
    assert "left for the sweep" in caplog.text


@pytest.mark.parametrize("scheme", ["redis://127.0.0.1:{port}/0", "amqp://guest:guest@127.0.0.1:{port}//"])
def test_a_broker_that_is_not_there_fails_a_publish_within_the_deadline(scheme, pointed, settings):
    settings.BROKER_PUBLISH_SECONDS = 1.0
    pointed(scheme.format(port=free_port()))
    started = time.monotonic()
    assert task_send("fulfillment.order_run", order_id=2) is False
    assert time.monotonic() - started < 1.5


def test_a_broker_that_answers_takes_the_publish(settings):
    # The suite's own broker (SQLite, or Redis/RabbitMQ when the services answer), on the run's queue.
    assert task_send("core.worker_ping", token="publish-deadline") is True


def test_a_publish_asks_the_result_backend_for_nothing(monkeypatch):
    # Nobody reads these tasks' results: a publish outside a worker would otherwise subscribe to each
    # task's result on the result backend (a round trip and a subscription per staff delivery).
    from config.celery import app

    asked = []
    monkeypatch.setattr(type(app.backend), "on_task_call", lambda backend, producer, task_id: asked.append(task_id))
    assert task_send("core.worker_ping", token="no-result") is True
    assert asked == []


def test_a_web_worker_loads_what_a_publish_needs_before_its_first_request():
    """What a gunicorn worker does when it loads `config.wsgi`, in a process of its own: the broker's
    transport and the result backend are loaded then, not in the first staff delivery's publish."""
    script = (
        "import sys, config.wsgi; from config.celery import app; loaded = set(sys.modules); "
        "connection = app.connection_for_write(); connection.transport; app.backend; connection.release(); "
        "print(sorted(set(sys.modules) - loaded))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test"}
    printed = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr[-2000:]
    assert printed.stdout.split("\n")[-2] == "[]"


def test_a_forked_process_publishes_with_threads_of_its_own(settings):
    # A Celery pool process or a gunicorn worker is forked from a parent that may have published:
    # the parent's publishing threads do not exist in the child.
    import os

    assert task_send("core.worker_ping", token="before-fork") is True
    child = os.fork()
    if child == 0:
        code = 0 if task_send("core.worker_ping", token="in-the-child") else 1
        os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.fixture
def one_publisher(monkeypatch):
    """Publishes made by one thread of their own (the process's pool has up to four), and every call
    of the app's send_task with the connection it was given, the third one failing as on a
    connection the broker dropped."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from config.celery import app
    from partner.core import enqueue

    pool = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(enqueue, "_publisher", (os.getpid(), pool))
    used = []
    send = app.send_task

    def send_task(name, *, connection=None, **options):
        used.append(connection)
        if len(used) == 3:
            raise ConnectionResetError("the broker restarted")
        return send(name, connection=connection, **options)

    monkeypatch.setattr(app, "send_task", send_task)
    yield used
    pool.submit(enqueue._connection_drop).result()
    pool.shutdown()


def test_publishes_share_a_connection_and_a_dropped_one_is_replaced_within_the_publish(one_publisher):
    used = one_publisher
    assert task_send("core.worker_ping", token="one") is True
    assert task_send("core.worker_ping", token="two") is True
    assert used[1] is used[0]  # kept: no connection opened per publish
    assert task_send("core.worker_ping", token="three") is True  # the kept one fails, a new one takes it
    assert len(used) == 4 and used[3] is not used[2]
    assert task_send("core.worker_ping", token="four") is True
    assert used[4] is used[3]


def test_a_connection_idle_too_long_is_not_used_again(one_publisher, monkeypatch):
    from partner.core import enqueue

    used = one_publisher
    assert task_send("core.worker_ping", token="one") is True
    monkeypatch.setattr(enqueue, "KEPT_SECONDS", 0.0)
    assert task_send("core.worker_ping", token="two") is True
    assert used[1] is not used[0]
