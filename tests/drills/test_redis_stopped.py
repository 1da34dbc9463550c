"""Fault drill: Redis (the broker) stopped during intake, then started again.

The drill runs its own redis-server on a free port (never the shared one),
with an append-only file as a production Redis would have. Orders arrive
while it runs, while it is stopped, and the pipeline resumes after it is
back: every notification answered 202 at once (the request never touches the
broker), and every order is fulfilled in the end (the worker's relay hands over
what was stored while the broker was away).
"""

import logging
import shutil
import signal
import socket
import subprocess

import pytest

from partner.fulfillment.models import Order, OrderStatus
from partner.inbox.models import Notification, NotificationState
from partner.sandbox.models import WebhookDelivery
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.ports import port_answers
from tests.helpers.sandbox import orders_placed
from tests.helpers.waiting import wait_for
from tests.helpers.workers import broker_point

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OwnRedis:
    def __init__(self, folder, port):
        self.folder, self.port, self.process = folder, port, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.folder),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: port_answers(self.port), timeout=20, message=f"redis-server on {self.port}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=20)


def broker_use(url) -> None:
    from config.celery import app

    app.conf.broker_read_url = url  # the worker consumes here; publishing follows broker_write_url
    broker_point(url)


@pytest.fixture
def own_redis(tmp_path, settings):
    from config.celery import app

    redis = OwnRedis(tmp_path, free_port())
    redis.start()
    broker_use(redis.url)
    yield redis
    redis.stop()
    app.conf.broker_read_url = None
    broker_point(settings.CELERY_BROKER_URL)


class Recorded(logging.Handler):
    """The records of one logger, whatever the root logger's handlers are: an embedded Celery worker's
    first start in a process hijacks the root logger, and with it pytest's `caplog` handler."""

    def __init__(self, name: str):
        super().__init__()
        self.records: list[logging.LogRecord] = []
        self.logger = logging.getLogger(name)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self):
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc):
        self.logger.removeHandler(self)


def test_every_order_accepted_while_redis_was_stopped_is_fulfilled_after_it_returns(demo, own_redis, settings):
    from celery.contrib.testing.worker import start_worker

    from config.celery import app

    with (
        start_worker(
            app, pool="threads", concurrency=4, perform_ping_check=False, loglevel="WARNING", shutdown_timeout=30
        ),
        Recorded("partner.core.enqueue") as relay_log,
    ):
        before = orders_placed(demo, 3)  # Redis up, the worker and its relay running
        wait_for(lambda: completed(before), timeout=60, message="the first orders completed")

        own_redis.stop()
        during = orders_placed(demo, 3)  # Redis down: stored, answered 202, waiting for the relay
        assert webhook_deliveries_wait(timeout=60)
        delivered = WebhookDelivery.objects.filter(resource_id__in=during, status=WebhookDelivery.Status.DELIVERED)
        assert delivered.count() == len(during)  # every one answered 2xx
        assert set(delivered.values_list("last_status_code", flat=True)) == {202}
        # The relay tries, and fails, with the three stored (partner/core/enqueue.py logs each such round).
        wait_for(
            lambda: any(f"{len(during)} notification(s) left waiting" in r.getMessage() for r in relay_log.records),
            timeout=60,
            message="the relay's round that the stopped broker refused",
        )
        waiting = Notification.objects.filter(resource_id__in=during, state=NotificationState.RECEIVED).count()
        assert waiting == len(during)

        own_redis.start()  # same port, same append-only file; the worker reconnects on its own
        wait_for(
            lambda: completed(before + during),
            timeout=120,
            message=lambda: f"every order completed (now {list(Order.objects.values_list('status', flat=True))})",
        )
    stored = Notification.objects.filter(resource_id__in=before + during).count()
    print(
        f"\nredis drill: {len(before)} orders completed before the stop; {len(during)} while stopped: "
        f"{delivered.count()} answered 202 at once, {waiting} stored as 'received'; after the restart the worker's "
        f"relay handed them over: all {len(before + during)} completed, {stored} notifications stored once each"
    )
    assert stored == len(before + during)


def completed(ids) -> bool:
    return Order.objects.filter(transaction_id__in=ids, status=OrderStatus.REQUEST_COMPLETED).count() == len(ids)
