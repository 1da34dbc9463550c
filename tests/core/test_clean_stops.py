"""Clean stops: a stopped worker finishes the order it was working on, and a stopped web server its request.

`make run` stops its processes the way honcho does: SIGTERM to each process group. The worker runs
under bin/graceful, which hands the signal to the worker's main process only: a warm shutdown,
with no pool process killed under it (no ERROR line). How long it takes is printed, not asserted
(honcho gives five seconds; measured about 2 s idle and 4 s with an upload under way).
gunicorn (production's web server) finishes the requests under way before it exits.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from partner.fulfillment.models import Order, OrderDocument, OrderStatus
from partner.sandbox.faults import fault_set
from partner.sandbox.transactions import transaction_create
from tests.helpers.ports import free_port
from tests.helpers.waiting import wait_for
from tests.helpers.workers import database_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_stopped_worker_finishes_its_order_and_exits_cleanly(demo, service, tmp_path):
    from config.celery import app

    app.control.purge()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": database_url(),
        "PUBLIC_BASE_URL": service.url,
        "SVC_BASE_URL": service.base_url,
        "SVC_TOKEN_URL": service.token_url,
    }
    log = tmp_path / "worker.log"
    command = [sys.executable, "bin/graceful", sys.executable, "-m", "celery", "-A", "config", "worker"]
    worker = subprocess.Popen(
        [*command, "--concurrency=1", "-l", "INFO"],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a group of its own, as honcho starts it
    )
    try:
        fault_set(endpoint="upload", latency=1.5)  # the order is under way when the stop comes
        txn = transaction_create(
            product=demo.products["address-verification"], user=demo.users["lender.demo"], loan=demo.loans[2]
        )
        wait_for(
            lambda: OrderDocument.objects.filter(order__transaction_id=txn.id).exclude(resource_id="").exists(),
            timeout=60,
            message=lambda: f"the order under way; worker log:\n{log.read_text()[-3000:]}",
        )
        stopped_at = time.monotonic()
        os.killpg(worker.pid, signal.SIGTERM)  # what honcho does
        code = worker.wait(timeout=30)
        took = time.monotonic() - stopped_at
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
    output = log.read_text()
    print(f"\nworker stopped {took:.1f} s after SIGTERM")
    assert code == 0, output[-3000:]
    assert "Warm shutdown" in output
    assert " ERROR" not in output and "exited with 'signal" not in output, output[-3000:]
    order = Order.objects.get(transaction_id=txn.id)
    assert order.delivered_at is not None and order.status != OrderStatus.FAILED  # finished, not cut off


def test_gunicorn_finishes_the_request_under_way_when_stopped(tmp_path):
    port = free_port()
    app = tmp_path / "slow.py"
    taken = tmp_path / "taken"  # the worker has the request
    app.write_text(
        "import pathlib, time\n"
        "def application(environ, start):\n"
        f"    pathlib.Path({str(taken)!r}).touch()\n"
        "    time.sleep(1.5)\n"
        "    start('200 OK', [('Content-Type', 'text/plain')])\n"
        "    return [b'finished']\n"
    )
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "--config",
            str(ROOT / "gunicorn.conf.py"),
            "--chdir",
            str(tmp_path),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "slow:application",
        ],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for(lambda: _answers(port), timeout=30, message="gunicorn to start")
        import threading

        answer = {}

        def ask():
            answer["response"] = requests.get(f"http://127.0.0.1:{port}/", timeout=30)

        thread = threading.Thread(target=ask)
        thread.start()
        wait_for(taken.exists, timeout=30, message="the request in the worker's hands")
        os.killpg(server.pid, signal.SIGTERM)
        thread.join(timeout=30)
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
    assert answer["response"].status_code == 200 and answer["response"].text == "finished"


def _answers(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
