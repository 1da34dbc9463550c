"""Broker URLs that need no server, and the local SQLite broker's start on a new file."""

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from partner.core.brokers import broker_url_serverless, sqlite_broker_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("url", "serverless"),
    [
        ("filesystem://", True),
        ("memory://", True),
        ("sqla+sqlite:///var/broker.sqlite3", True),
        ("sqlalchemy+sqlite:////srv/broker.sqlite3", True),
        ("Sqla+SQLite:///var/broker.sqlite3", True),
        ("redis://a.example:6379/0;filesystem://", True),
        ("redis://a.example:6379/0", False),
        ("rediss://:pw@a.example:6380/0", False),
        ("amqp://u:p@rabbit.example//", False),
        ("sqla+postgresql://u:p@db.example/partner", False),
        ("redis://a.example:6379/0;redis://b.example:6379/0", False),
        ("", False),
    ],
)
def test_broker_url_serverless(url, serverless):
    assert broker_url_serverless(url) is serverless


def test_sqlite_broker_path():
    assert sqlite_broker_path("sqla+sqlite:////srv/partner/broker.sqlite3") == Path("/srv/partner/broker.sqlite3")
    assert sqlite_broker_path("sqla+sqlite:///var/broker.sqlite3?timeout=5") == Path("var/broker.sqlite3")
    assert sqlite_broker_path("sqla+sqlite://") is None  # in memory
    assert sqlite_broker_path("redis://127.0.0.1:6379/0") is None


# A process of a local run (web, worker, beat), reduced to what it does with the broker: the
# settings' preparation, then a publish, all at the same instant as the others.
PROCESS = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from kombu import Connection
from partner.core.brokers import sqlite_broker_options, sqlite_broker_prepare, sqlite_broker_url
path, start, number = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
url, options = sqlite_broker_url(path), sqlite_broker_options(path)
time.sleep(max(0.0, start - time.time() - 0.05))
while time.time() < start:
    pass
sqlite_broker_prepare(url, options, queue="celery")
with Connection(url, transport_options=options) as connection:
    connection.SimpleQueue("celery").put({{"number": number}})
print("published")
"""


def test_processes_starting_at_once_on_a_new_broker_file_all_publish(tmp_path):
    """Kombu makes its tables and the queue's row on first use: processes doing so at once on a new
    file collided ("table already exists", the queue's unique name), and the loser's channel was
    unusable from then on (a worker that lost stopped). The settings' preparation, under a lock,
    leaves nothing to collide on."""
    path = tmp_path / "broker.sqlite3"
    start = time.time() + 6  # every process has imported kombu and SQLAlchemy by then
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", PROCESS.format(root=str(ROOT)), str(path), str(start), str(number)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(12)  # without the preparation, some of 12 always collided
    ]
    outcomes = [process.communicate(timeout=60) for process in processes]
    for process, (out, err) in zip(processes, outcomes, strict=True):
        assert process.returncode == 0, err[-2000:]
        assert out.strip() == "published"
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name FROM kombu_queue").fetchall() == [("celery",)]
        assert db.execute("SELECT count(*) FROM kombu_message WHERE visible").fetchone()[0] == 12
