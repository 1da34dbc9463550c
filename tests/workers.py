"""Real Celery workers for the tests whose behaviour is about the queue: started, killed, pointed at the sandbox."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[1]


def database_url() -> str:
    """The test database, as a worker process reaches it."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def worker_start(service, log_path: Path, **environ) -> subprocess.Popen:
    """`celery -A config worker` (one pool process) on the test database, calling the live server's sandbox."""
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
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=prefork", "--concurrency=1", "-l", "INFO"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def worker_kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)  # the whole worker: main process and its children
    process.wait(timeout=30)
