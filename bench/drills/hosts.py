"""Drill: more than one machine (`make drill`, or `bench/run.py --only hosts`; bench/README.md says more).

Network namespaces are the hosts (bench/harness/hosts.py): two web hosts behind haproxy, two worker
hosts (the deployment's worker command, the beat on the second), PostgreSQL, Redis and RabbitMQ on a
host of their own; the platform is the sandbox behind the emulator of its real latency, every call
and reference of the worker hosts through it. This process plays the platform's users. Scenarios,
under a stream of orders: `worker_cut` (a worker host cut off mid-upload, back after its lease ended:
it must send nothing for the orders the other took over, whose own orders stay its own), `web_stop`
(a web host killed during a burst of webhooks: each stored once), `broker_restart` (RabbitMQ stopped
and started: nothing lost, nothing sent twice) and `scaleout` (orders/s with two worker hosts, then
one; `bench/run.py --only scaleout` runs it alone). Each reports its orders, the accepted PATCHes per
order from the sandbox's records and its time to recover; "ok" is its verdict. The platform's access
log (the caller's address from the emulator's X-Forwarded-For) says which host sent which call.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from bench.harness import stack
from bench.harness.hosts import PLATFORM_ADDRESS, PORT_PLATFORM, PORT_PLATFORM_LATENT, PORT_WEB, Hosts, address, missing

# Shorter than production's (15 s, 120 s, 30 s), so a cut-off host's order is taken over within
# seconds; not so short that a renewal every third of it is missed on a busy shared machine.
LEASE_SECONDS = 10
STALL_SECONDS = 20
SWEEP_INTERVAL = 5
# Seconds the sandbox holds each upload until the worker host is cut off: longer than a lease, so
# that an order uploading meanwhile on the other host keeps its lease only by renewing it while
# that one slow call runs.
UPLOAD_PAUSE = 1.5 * LEASE_SECONDS
WEB_WORKERS = 2
# The platform's real latency (bench/benchmarks/orders.py's), in front of every call of the worker hosts.
API_MS = 300
UPLOAD_MS = 500
# What one order waits on the platform: GET transaction, slots, upload, PATCH, and the callback's GET.
WAITS_PER_ORDER_S = (4 * API_MS + UPLOAD_MS) / 1000
# Threads per worker host in the scale-out part: few enough that one host is bound by the waits, not
# by the two cores every "host" of this machine shares (docs/performance.md, "Scale-out"). The fault
# scenarios run the settings' own (CELERY_WORKER_CONCURRENCY, 32).
SCALEOUT_CONCURRENCY = 4
SCALEOUT_ORDERS = 120
# The platform's access log names the caller the emulator saw (X-Forwarded-For), not the emulator.
PLATFORM_ACCESS_FORMAT = '%({x-forwarded-for}i)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'
ACCESS_LINE = re.compile(
    r'^(?P<client>\S+) "(?P<method>[A-Z]+) (?P<path>\S+) [^"]*" (?P<status>\d{3})(?: \S+ (?P<ms>\d+)ms)?'
)


class Drill:
    """The hosts and their processes, and what this process (the platform's side) needs to drive them."""

    def __init__(self, hosts: Hosts):
        self.hosts = hosts
        self.concurrency: dict[str, int | None] = {}  # threads per worker host (None: the settings')
        self.platform_log = stack.LOGS / "hosts-platform-access.log"
        self.seed = None
        self.restarts: Counter = Counter()
        self.exits: list[dict] = []  # why each restarted worker had stopped (its log is started again)
        self._closing = threading.Event()
        self._supervisor = threading.Thread(target=self._supervise, name="worker-supervisor", daemon=True)

    # Environment and processes ------------------------------------------------------------------

    def env(self, *, sandbox: bool) -> dict:
        urls = self.hosts.urls
        return stack.app_env(
            database=urls.database,
            public_base_url=urls.balancer,
            sandbox=sandbox,
            settings=stack.SETTINGS,  # the sandbox's upload slots are http on a private address
            DJANGO_ALLOWED_HOSTS="*",
            CELERY_BROKER_URL=urls.broker,
            CELERY_RESULT_BACKEND=f"{urls.cache[:-2]}/1",
            CACHE_URL=urls.cache,
            SVC_BASE_URL=f"{urls.platform_latent}/sandbox",
            SVC_TOKEN_URL=f"{urls.platform_latent}/sandbox/oauth2/v1/token",
            SANDBOX_BASE_URL=f"{urls.platform_latent}/sandbox",  # references and upload locations too
            LEASE_SECONDS=LEASE_SECONDS,
            STALL_SECONDS=STALL_SECONDS,
            SWEEP_INTERVAL=SWEEP_INTERVAL,
            SANDBOX_WEBHOOK_BACKOFF=0.5,
            SANDBOX_WEBHOOK_BACKOFF_MAX=4,
            SANDBOX_WEBHOOK_MAX_ATTEMPTS=10,
            SANDBOX_WEBHOOK_CONNECT_TIMEOUT=2,
            PROMETHEUS_MULTIPROC_DIR=str(self.hosts.scratch / "metrics"),
        )

    def gunicorn(self, name: str, host: str | None, bind: str, *, sandbox: bool, workers: int, extra=()) -> None:
        log = stack.LOGS / f"hosts-{name}-access.log"
        argv = [str(stack.VENV_BIN / "gunicorn"), "config.wsgi", "--bind", bind, "--workers", str(workers)]
        self.hosts.spawn(name, host, [*argv, "--access-logfile", str(log), *extra], self.env(sandbox=sandbox))
        ip, port = bind.split(":")
        self.hosts.wait_port(name, ip, int(port))

    def web_start(self, host: str) -> None:
        self.gunicorn(host, host, f"{address(host)}:{PORT_WEB}", sandbox=False, workers=WEB_WORKERS)

    def worker_start(self, host: str, concurrency: int | None = None) -> None:
        """The worker command of the deployment (its pool and threads from the settings); with
        `concurrency`, that many threads (CELERY_WORKER_CONCURRENCY), as an operator sizes a host."""
        self.concurrency[host] = concurrency
        env = self.env(sandbox=False)
        if concurrency:
            env["CELERY_WORKER_CONCURRENCY"] = str(concurrency)
        argv = [stack.PYTHON, "-m", "celery", "-A", "config", "worker", "--loglevel=WARNING"]
        argv += ["--without-gossip", "--without-mingle", f"--hostname={host}@%h"]
        self.hosts.spawn(host, host, argv, env)

    def start(self) -> None:
        (self.hosts.scratch / "metrics").mkdir()
        self.hosts.create()
        self.hosts.postgres_start()
        self.hosts.redis_start()
        self.hosts.rabbitmq_start()
        stack.manage("migrate", "--no-input", "-v", "0", env=self.env(sandbox=True))
        self.platform_log.write_text("")
        self.gunicorn(
            "platform",
            None,
            f"{PLATFORM_ADDRESS}:{PORT_PLATFORM}",
            sandbox=True,
            workers=4,
            extra=("--access-logformat", PLATFORM_ACCESS_FORMAT),
        )
        latent = ["--bind", PLATFORM_ADDRESS, "--port", str(PORT_PLATFORM_LATENT)]
        latent += ["--upstream", f"{PLATFORM_ADDRESS}:{PORT_PLATFORM}", "--api-ms", str(API_MS)]
        self.hosts.spawn(
            "latency", None, [stack.PYTHON, "-m", "bench.harness.latency_proxy", *latent, "--upload-ms", str(UPLOAD_MS)]
        )
        self.hosts.wait_port("latency", PLATFORM_ADDRESS, PORT_PLATFORM_LATENT)
        for host in ("web1", "web2"):
            self.web_start(host)
        self.hosts.balancer_start()
        self.django_setup()
        from partner.catalog.services import partner_account_set, products_pull
        from partner.sandbox.seeding import sandbox_seed

        self.seed = sandbox_seed(public_base_url=self.hosts.urls.balancer)  # webhooks to the load balancer
        partner_account_set(username="lender.demo", password="demo-password-1", company="DEMO01")
        products_pull()
        for host in ("wk1", "wk2"):
            self.worker_start(host)
        beat = [stack.PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING"]
        self.hosts.spawn("beat", "wk2", [*beat, "-s", str(self.hosts.scratch / "beat")], self.env(sandbox=False))
        self.workers_ready(["wk1", "wk2"])
        self._supervisor.start()

    def _supervise(self) -> None:
        """What a worker host's service manager does (systemd's Restart=always, a pod's restart
        policy): a Celery worker that exited is started again, and counted."""
        while not self._closing.wait(1.0):
            for host in ("wk1", "wk2"):
                process = self.hosts.processes.get(host)
                if process is not None and process.popen.poll() is not None:
                    self.restarts[host] += 1
                    reason = [line for line in process.log_tail(20000).splitlines() if "CRITICAL" in line]
                    code = process.popen.returncode
                    self.exits.append({"host": host, "exit": code, "why": reason[-1][:300] if reason else ""})
                    self.worker_start(host, self.concurrency.get(host))

    def close(self) -> None:
        self._closing.set()
        if self._supervisor.is_alive():
            self._supervisor.join(timeout=5)

    def django_setup(self) -> None:
        """This process configured as the platform (the sandbox, on the drill's database)."""
        from django.apps import apps

        if apps.ready:
            raise RuntimeError("the hosts drill configures Django itself: run it alone (bench/run.py --only hosts)")
        os.environ.update(self.env(sandbox=True))
        import django

        django.setup()

    def workers_ready(self, hosts: list[str], timeout: float = 90) -> None:
        from config.celery import app

        deadline = time.monotonic() + timeout
        wanted = {f"{host}@" for host in hosts}
        while time.monotonic() < deadline:
            # A connection of its own each time: one kept from before a broker restart is dead.
            with app.connection_for_write() as connection:
                replies = app.control.ping(timeout=1, connection=connection)
            answered = {name.split("@")[0] + "@" for reply in replies for name in reply}
            if wanted <= answered:
                return
        raise RuntimeError(f"worker hosts {hosts} did not answer a ping within {timeout:g}s")

    # The platform's side ------------------------------------------------------------------------

    def order_create(self) -> str:
        from partner.sandbox.transactions import transaction_create

        seed = self.seed
        user, loan = seed.users["lender.demo"], seed.loans[2]
        return transaction_create(product=seed.products["address-verification"], user=user, loan=loan).id

    def calls(self, offset: int = 0, end: int | None = None) -> list[dict]:
        """The platform's access log from byte `offset` (to `end`): who called what, and its answer."""
        with self.platform_log.open() as handle:
            handle.seek(offset)
            lines = handle.read(None if end is None else end - offset).splitlines()
        return [match.groupdict() for line in lines if (match := ACCESS_LINE.match(line))]


class Stream:
    """Orders created at `rate` per second from a thread of their own, until stopped."""

    def __init__(self, drill: Drill, rate: float):
        self.drill, self.rate = drill, rate
        self.ids: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="order-stream", daemon=True)

    def start(self) -> "Stream":
        self._thread.start()
        return self

    def _run(self) -> None:
        from django.db import connection

        try:
            following = time.monotonic()
            while not self._stop.is_set():
                self.ids.append(self.drill.order_create())
                following += 1 / self.rate
                self._stop.wait(max(0.0, following - time.monotonic()))
        finally:
            connection.close()

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join()
        return list(self.ids)


# Figures ------------------------------------------------------------------------------------------

FINISHED = ("REQUEST_COMPLETED", "FAILED", "DECLINED")
DELIVERED = ("RESPONSE_DELIVERED", "REQUEST_COMPLETED")  # PATCHed (and perhaps confirmed already)


def orders_wait(ids: list[str], *, timeout: float) -> float | None:
    """Wait until every order of `ids` is finished; the monotonic time it was seen so (None: timeout)."""
    from partner.fulfillment.models import Order

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if Order.objects.filter(transaction_id__in=ids, status__in=FINISHED).count() >= len(ids):
            return time.monotonic()
        time.sleep(0.25)
    return None


def patches_per_order(ids: list[str]) -> dict:
    """Accepted PATCHes per order, from the sandbox's records: {patches: how many orders}."""
    from django.db.models import Count

    from partner.sandbox.models import Transaction

    counts = Transaction.objects.filter(id__in=ids).annotate(accepted=Count("patches"))
    counts = counts.values_list("accepted", flat=True)
    return dict(sorted(Counter(counts).items()))


def statuses(ids: list[str]) -> dict:
    from partner.fulfillment.models import Order

    found = Counter(Order.objects.filter(transaction_id__in=ids).values_list("status", flat=True))
    missing_orders = len(ids) - sum(found.values())
    if missing_orders:
        found["NO ORDER"] = missing_orders
    return dict(found)


def orders_report(ids: list[str]) -> dict:
    patches = patches_per_order(ids)
    return {
        "orders": len(ids),
        "statuses": statuses(ids),
        "accepted_patches_per_order": patches,
        "each_order_patched_once": bool(ids) and patches == {1: len(ids)},
    }


def finished_ok(report: dict) -> bool:
    return report["each_order_patched_once"] and report["statuses"] == {"REQUEST_COMPLETED": report["orders"]}


# Scenarios ----------------------------------------------------------------------------------------


def _in_flight(calls: list[dict], client: str) -> set[str]:
    """Orders whose slots `client` asked for and that nobody PATCHed yet: their upload is running."""
    patched = {call["path"] for call in calls if call["method"] == "PATCH"}
    return {
        _order_of(call["path"])
        for call in calls
        if call["client"] == client
        and call["path"].endswith("/response/resources")
        and call["path"].removesuffix("/resources") not in patched
    }


def _order_of(path: str) -> str:
    return path.split("/transactions/")[1].split("/")[0]


def _patched(call: dict) -> bool:
    """An accepted PATCH of an order's response."""
    return call["method"] == "PATCH" and call["path"].endswith("/response") and call["status"].startswith("2")


def worker_cut(drill: Drill, *, rate: float = 1.0, host: str = "wk1", other: str = "wk2") -> dict:
    """A worker host cut off in the middle of an order, back after its lease ended. Meanwhile the
    other host's uploads are held longer than a lease: its orders must stay its own (the lease
    renewed while the slow call runs), where the cut-off host's pass to the other."""
    from django.db.models import Max
    from django.utils import timezone

    from partner.fulfillment.models import Order
    from partner.sandbox.faults import rules_forget
    from partner.sandbox.models import FaultRule, UploadSlot

    cut_address = address(host)
    offset = drill.platform_log.stat().st_size
    pause = FaultRule.objects.create(endpoint=FaultRule.Endpoint.UPLOAD, latency=UPLOAD_PAUSE)
    rules_forget()
    stream = Stream(drill, rate).start()
    held: set[str] = set()
    deadline, seen = time.monotonic() + 60, None
    while time.monotonic() < deadline:
        time.sleep(0.1)
        calls = drill.calls(offset)
        held = _in_flight(calls, cut_address)
        seen = seen or (time.monotonic() if held else None)
        if not held:
            continue
        # Its upload under way (sent after the slots' answer, then UPLOAD_MS in the emulator), and a
        # few seconds for the other host to be uploading too.
        waited = time.monotonic() - seen
        if waited > 2 * UPLOAD_MS / 1000 and (_in_flight(calls, address(other)) or waited > UPLOAD_PAUSE / 3):
            break
    if not held:
        pause.delete()
        stream.stop()
        return {"ok": False, "error": f"{host} never started an upload within 60 s"}
    cut_offset = drill.platform_log.stat().st_size
    drill.hosts.cut(host)
    cut_at, cut_wall = time.monotonic(), timezone.now()
    pause.delete()
    rules_forget()

    # What the host sent before the cut has ended at the platform (an upload held UPLOAD_PAUSE), and
    # is logged: the orders it held are those it called about and that no PATCH finished by then
    # (one logged before the cut, or its own: a cut-off host sends nothing).
    time.sleep(max(0.0, cut_at + UPLOAD_PAUSE + UPLOAD_MS / 1000 + 2 - time.monotonic()))
    finished_before = {_order_of(call["path"]) for call in drill.calls(offset, cut_offset) if _patched(call)}
    before = drill.calls(offset)
    held = {
        _order_of(call["path"]) for call in before if call["client"] == cut_address and "/transactions/" in call["path"]
    }
    held -= finished_before | {
        _order_of(call["path"]) for call in before if _patched(call) and call["client"] == cut_address
    }

    taken_over = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # the other host completed them, and their leases are free
        done = Order.objects.filter(transaction_id__in=held, status__in=DELIVERED, claimed_until=None).count()
        if done == len(held):
            taken_over = Order.objects.filter(transaction_id__in=held).aggregate(last=Max("delivered_at"))["last"]
            break
        time.sleep(0.25)
    time.sleep(1.0)
    back_offset = drill.platform_log.stat().st_size
    drill.hosts.reconnect(host)
    back_at = time.monotonic()
    time.sleep(max(10.0, 2 * LEASE_SECONDS))  # the cut-off host's calls come back and run to their end
    ids = stream.stop()
    finished = orders_wait(ids, timeout=300)
    after = drill.calls(back_offset)
    # Their calls name the order, or (an upload) one of its slots.
    theirs = [*held, *UploadSlot.objects.filter(transaction_id__in=held).values_list("id", flat=True)]
    held_calls = Counter(
        f"{call['method']} {'patch' if call['path'].endswith('/response') else 'other'} {call['status']}"
        for call in after
        if call["client"] == cut_address and any(key in call["path"] for key in theirs)
    )
    slots_by, patched_by = {}, {}
    for call in drill.calls(offset):
        if call["path"].endswith("/response/resources"):
            slots_by.setdefault(_order_of(call["path"]), call["client"])
        elif _patched(call):
            patched_by[_order_of(call["path"])] = call["client"]
    # The other host's orders stay its own: each one it asked slots for, it PATCHed.
    other_address = address(other)
    changed_hands = [
        txn for txn, client in slots_by.items() if client == other_address and patched_by.get(txn) != client
    ]
    slow_uploads = Counter(
        "cut-off host" if call["client"] == cut_address else "other host"
        for call in drill.calls(offset)
        if call["path"].startswith("/sandbox/uploads/") and int(call["ms"] or 0) >= LEASE_SECONDS * 1000
    )
    completed_by = Counter(
        "other host" if call["client"] != cut_address else "cut-off host"
        for call in drill.calls(offset)
        if call["method"] == "PATCH" and any(txn in call["path"] for txn in held) and call["status"].startswith("2")
    )
    report = orders_report(ids)
    # Reading is allowed (a callback's event may reach any host); sending is not: no PATCH, no slot
    # request, no upload.
    sent_back = sum(count for key, count in held_calls.items() if not key.startswith("GET"))
    report.update(
        {
            "cut_host": host,
            "orders_in_flight_on_cut_host": len(held),
            "their_ids": sorted(held),
            "their_accepted_patches": patches_per_order(sorted(held)),
            "their_patches_by": dict(completed_by),
            "cut_host_calls_for_them_after_return": dict(held_calls),
            "uploads_longer_than_a_lease": dict(slow_uploads),
            "other_orders_that_changed_hands": len(changed_hands),
            "cut_s": round(back_at - cut_at, 1),
            "time_to_recover_s": round((taken_over - cut_wall).total_seconds(), 1) if taken_over else None,
            "all_finished_s_after_return": round(finished - back_at, 1) if finished else None,
        }
    )
    report["ok"] = bool(
        finished_ok(report)
        and taken_over
        and sent_back == 0
        and not changed_hands
        and completed_by.get("cut-off host", 0) == 0
        and report["their_accepted_patches"] == {1: len(held)}
    )
    return report


def web_stop(drill: Drill, *, burst: int = 30, host: str = "web1", stop_after: int = 10) -> dict:
    """A web host killed during a burst of webhooks: the retries land on the other; each stored once."""
    from partner.inbox.models import Notification
    from partner.sandbox.models import WebhookAttempt, WebhookDelivery
    from partner.sandbox.webhooks import webhook_deliveries_wait

    ids = []
    stopped_at = None
    for number in range(burst):
        ids.append(drill.order_create())
        if number + 1 == stop_after:
            drill.hosts.stop(host, sig=signal.SIGKILL)
            stopped_at = time.monotonic()
    webhook_deliveries_wait(timeout=120)
    deliveries = WebhookDelivery.objects.filter(resource_id__in=ids)
    events = list(deliveries.values_list("event_id", flat=True))
    stored = Counter(Notification.objects.filter(event_id__in=events).values_list("event_id", flat=True))
    all_stored = time.monotonic()
    finished = orders_wait(ids, timeout=300)
    answers = Counter(
        str(code or error[:40])
        for code, error in WebhookAttempt.objects.filter(delivery__in=deliveries).values_list("status_code", "error")
    )
    report = orders_report(ids)
    last_attempt = WebhookAttempt.objects.filter(delivery__in=deliveries).order_by("-started_at").first()
    report.update(
        {
            "stopped_host": host,
            "stopped_after_webhooks": stop_after,
            "webhooks": len(events),
            "webhooks_stored_once": sum(1 for event in events if stored[event] == 1),
            "webhooks_not_stored": sum(1 for event in events if stored[event] == 0),
            "deliveries_by_status": dict(Counter(deliveries.values_list("status", flat=True))),
            "attempts_by_answer": dict(answers),
            "retried_webhooks": deliveries.filter(attempt_count__gt=1).count(),
            "duplicates_answered_202": sum(
                Notification.objects.filter(event_id__in=events).values_list("duplicates", flat=True)
            ),
            "time_to_recover_s": round(all_stored - stopped_at, 1),
            "last_webhook_attempt": str(last_attempt.started_at) if last_attempt else None,
            "all_finished_s": round(finished - stopped_at, 1) if finished else None,
        }
    )
    report["ok"] = bool(finished_ok(report) and report["webhooks_stored_once"] == len(events) == len(ids))
    drill.web_start(host)  # the host back for what follows
    return report


def broker_restart(drill: Drill, *, rate: float = 1.0, before: float = 5.0, after: float = 8.0) -> dict:
    """The broker host's RabbitMQ stopped and started under a steady stream of orders."""
    stream = Stream(drill, rate).start()
    time.sleep(before)
    down_at = time.monotonic()
    stop_s = drill.hosts.rabbitmq_stop()
    start_s = drill.hosts.rabbitmq_start()
    up_at = time.monotonic()
    time.sleep(after)
    ids = stream.stop()
    finished = orders_wait(ids, timeout=300)
    report = orders_report(ids)
    report.update(
        {
            "broker_stop_s": round(stop_s, 1),
            "broker_start_s": round(start_s, 1),
            "broker_down_s": round(up_at - down_at, 1),
            "time_to_recover_s": round(finished - up_at, 1) if finished else None,
        }
    )
    report["ok"] = bool(finished_ok(report) and finished)
    return report


def scaleout(drill: Drill, *, orders: int = SCALEOUT_ORDERS, concurrency: int = SCALEOUT_CONCURRENCY) -> dict:
    """Orders/s with two worker hosts, then with one, each of `concurrency` threads, at the
    platform's latency: `orders` created at once, first created to last completed. A warm-up batch
    first (imports, connections, the token), and two hosts before one, so that both measured runs
    find their workers warm. Beside each rate: the CPU every process of the drill used meanwhile
    and the machine's, to tell a run bound by the waits from one bound by the shared cores."""
    for host in ("wk1", "wk2"):
        if host in drill.hosts.processes:
            drill.hosts.stop(host)
        drill.worker_start(host, concurrency)
    drill.workers_ready(["wk1", "wk2"])
    warm = [drill.order_create() for _ in range(4 * concurrency)]
    orders_wait(warm, timeout=300)
    runs = {"2_worker_hosts": _scaleout_run(drill, orders, hosts=2, concurrency=concurrency)}
    drill.hosts.stop("wk2")
    runs["1_worker_host"] = _scaleout_run(drill, orders, hosts=1, concurrency=concurrency)
    drill.worker_start("wk2", concurrency)  # both hosts back for whatever follows
    one, two = runs["1_worker_host"]["orders_per_s"], runs["2_worker_hosts"]["orders_per_s"]
    return {
        "platform": {"api_ms": API_MS, "upload_ms": UPLOAD_MS, "waits_per_order_s": WAITS_PER_ORDER_S},
        "threads_per_worker_host": concurrency,
        "orders_per_run": orders,
        **runs,
        "two_over_one": round(two / one, 2) if one and two else None,
        "ok": all(finished_ok(run) for run in runs.values()),
    }


ROLES = {  # the drill's processes by the host they stand for
    "wk1": "worker hosts",
    "wk2": "worker hosts",
    "beat": "worker hosts",
    "web1": "web hosts and balancer",
    "web2": "web hosts and balancer",
    "haproxy": "web hosts and balancer",
    "platform": "platform (sandbox, latency emulator, this process)",
    "latency": "platform (sandbox, latency emulator, this process)",
    "postgres": "database host",
    "redis": "database host",
    "rabbitmq": "database host",
}


def _machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of every CPU of the machine so far, from /proc/stat."""
    values = [int(value) for value in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]  # idle, iowait
    return sum(values[:8]) - idle, sum(values[:8])


def _cpu_now(drill: Drill) -> dict[str, float]:
    used = drill.hosts.cpu_seconds()
    used["this process"] = sum(os.times()[:2])
    return used


def _scaleout_run(drill: Drill, orders: int, *, hosts: int, concurrency: int) -> dict:
    from django.db.models import Max, Min

    from partner.fulfillment.models import Order
    from partner.sandbox.models import Transaction

    drill.workers_ready(["wk1", "wk2"][:hosts])
    load_before = os.getloadavg()
    cpu_before, machine_before, began = _cpu_now(drill), _machine_busy(), time.monotonic()
    ids = [drill.order_create() for _ in range(orders)]
    orders_wait(ids, timeout=900)
    cpu_after, machine_after, elapsed = _cpu_now(drill), _machine_busy(), time.monotonic() - began
    load_after = os.getloadavg()
    first = Transaction.objects.filter(id__in=ids).aggregate(first=Min("created_at"))["first"]
    last = Order.objects.filter(transaction_id__in=ids).aggregate(last=Max("completed_at"))["last"]
    span = (last - first).total_seconds() if first and last else None
    by_role: Counter = Counter()
    for name, seconds in cpu_after.items():
        role = ROLES.get(name, "platform (sandbox, latency emulator, this process)")
        by_role[role] += max(0.0, seconds - cpu_before.get(name, 0.0))
    ours = sum(by_role.values())
    busy = (machine_after[0] - machine_before[0]) / max(1, machine_after[1] - machine_before[1])
    rate = len(ids) / span if span else None
    bound = hosts * concurrency / WAITS_PER_ORDER_S  # every thread waiting on the platform all the time
    return {
        **orders_report(ids),
        "span_s": round(span, 2) if span else None,
        "orders_per_s": round(rate, 2) if rate else None,
        "waits_alone_allow_per_s": round(bound, 2),
        "share_of_what_waits_allow": round(rate / bound, 2) if rate else None,
        "cpu_ms_per_order": {role: round(seconds * 1000 / len(ids)) for role, seconds in sorted(by_role.items())},
        "drill_cores_used": round(ours / elapsed, 2),  # of the machine's os.cpu_count()
        "worker_hosts_cores_used": round(by_role["worker hosts"] / elapsed, 2),
        "machine_busy_pct": round(100 * busy, 1),  # every process of the machine, ours or not
        "cpus": os.cpu_count(),
        "load_average_before_after": [round(load_before[0], 1), round(load_after[0], 1)],
    }


SCENARIOS = ("worker_cut", "web_stop", "broker_restart", "scaleout")


def drill(
    *,
    database: str | None = None,
    burst: int = 30,
    rate: float = 1.0,
    orders: int | None = None,
    concurrency: int | None = None,
    scenarios=SCENARIOS,
) -> dict:
    """The `scenarios` on one set of hosts; the report, with "ok" the verdict. `database` is not used:
    the hosts run a PostgreSQL cluster of their own. `orders` and `concurrency` size the scale-out."""
    absent = missing()
    if absent:
        return {"ok": False, "skipped": f"this machine lacks {', '.join(absent)}"}
    hosts = Hosts()
    report: dict = {"layout": "bench/harness/hosts.py"}
    began = time.monotonic()
    current = Drill(hosts)
    try:
        current.start()
        report["started_s"] = round(time.monotonic() - began, 1)
        for name, scenario in (
            ("worker_cut", lambda: worker_cut(current, rate=rate)),
            ("web_stop", lambda: web_stop(current, burst=burst)),
            ("broker_restart", lambda: broker_restart(current, rate=rate)),
            (
                "scaleout",
                lambda: scaleout(
                    current, orders=orders or SCALEOUT_ORDERS, concurrency=concurrency or SCALEOUT_CONCURRENCY
                ),
            ),
        ):
            if name not in scenarios:
                continue
            print(f"  {name} ...", flush=True)
            report[name] = scenario()
            report[name]["worker_restarts_so_far"] = dict(current.restarts)
            print(f"  {name}: {'ok' if report[name]['ok'] else 'FAILED'} {json.dumps(report[name])}", flush=True)
    finally:
        current.close()
        hosts.destroy()
    ran = [value for value in report.values() if isinstance(value, dict)]
    report["worker_exits"] = current.exits
    report["ok"] = len(ran) == len(scenarios) and all(item["ok"] for item in ran)
    report["took_s"] = round(time.monotonic() - began, 1)
    return report


def scaleout_bench(*, database: str | None = None, orders: int | None = None, concurrency: int | None = None) -> dict:
    """The scale-out part alone (`bench/run.py --only scaleout`): the hosts set up, no fault scenario.
    In a process of its own, as the drill configures Django for itself and `make bench` has
    configured it already for the benchmarks before."""
    absent = missing()
    if absent:
        return {"ok": False, "skipped": f"this machine lacks {', '.join(absent)}"}
    with tempfile.TemporaryDirectory(prefix="pd-scaleout-") as folder:
        output = Path(folder) / "report.json"
        argv = [stack.PYTHON, "-m", "bench.drills.hosts", "--scenarios", "scaleout", "--output", str(output)]
        argv += [f"--orders={orders}"] if orders else []
        argv += [f"--concurrency={concurrency}"] if concurrency else []
        ran = subprocess.run(argv, cwd=stack.ROOT, env=stack.ENVIRON_AT_START, check=False)
        if not output.exists():
            return {"ok": False, "error": f"the scale-out process exited ({ran.returncode}) without a report"}
        return json.loads(output.read_text())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The hosts drill, or some of its scenarios, in this process")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--orders", type=int, default=None, help="orders per scale-out run")
    parser.add_argument("--concurrency", type=int, default=None, help="threads per worker host in the scale-out")
    parser.add_argument("--output", required=True, help="where to write the report (JSON)")
    args = parser.parse_args()
    chosen = tuple(name.strip() for name in args.scenarios.split(",") if name.strip())
    result = drill(orders=args.orders, concurrency=args.concurrency, scenarios=chosen)
    Path(args.output).write_text(json.dumps(result, indent=2, default=str))
    sys.exit(0 if result["ok"] else 1)
