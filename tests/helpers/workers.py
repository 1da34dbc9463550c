"""Celery for the tests whose behaviour is about the queue: real workers started, killed and pointed at the
sandbox, and the app pointed at another broker."""

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database, as a worker process reaches it."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_start(service, log_path: Path, **environ) -> subprocess.Popen:
    """`celery -A config worker` as production runs it (its pool and concurrency are the settings':
    one process, its tasks in threads) on the test database, calling the live server's sandbox."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url(),
        "PUBLIC_BASE_URL": service.url,
        "SVC_BASE_URL": service.base_url,
        "SVC_TOKEN_URL": service.token_url,
        **environ,
    }
    log = log_path.open("ab")
    return subprocess.Popen(
        # A node name of its own: on RabbitMQ a worker's remote-control queue (<name>.celery.pidbox)
        # is exclusive, and the workers of other runs, or of this run's other xdist workers, share the host.
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-l", "INFO", "-n", f"{node_name()}@%h"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def node_name() -> str:
    """A Celery node name no other worker process on this machine has (the run's id and a random part)."""
    from django.conf import settings

    return f"partner-test-{settings.RUN_ID}-{uuid.uuid4().hex[:8]}"


def worker_kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)  # the whole worker: main process and its children
    process.wait(timeout=30)


def broker_point(url):
    """Point the Celery app at `url`, dropping every pooled connection to the old broker."""
    from kombu import pools

    from config.celery import app

    # Publishing uses the write URL; CELERY_BROKER_URL in the environment would win over broker_url.
    app.conf.broker_write_url = url
    if app._pool is not None:
        app._pool.force_close_all()
    app._pool = None
    app.amqp._producer_pool = None
    # The remote control's mailbox keeps the producer pool it first took (a cached property): without
    # this a later `app.control` call (inspect, cancel_consumer) acquires from the pool closed above.
    with contextlib.suppress(AttributeError):
        del app.control.mailbox.producer_pool
    pools.reset()
