"""Drill: a randomised fault schedule, Jepsen-style, on bench/harness/cluster.py's hosts
(docs/performance.md, "How the entries measure", says what it draws and checks).

From a seed, one `random.Random` draws the schedule (`draw`); everything done and seen is kept as a
JSON history (var/bench/schedule-<seed>.json), held against the invariants by schedule_check.py.

    .venv/bin/python -m bench.drills.schedule --orders 12 --seed 7
    .venv/bin/python -m bench.drills.schedule --faults worker_cut,web_stop,broker_restart --each --broker rabbitmq
"""

import argparse
import contextlib
import copy
import json
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from bench.drills.schedule_check import FINISHED, check
from bench.harness import stack
from bench.harness.cluster import ACCESS_LINE, LEASE_SECONDS, Cluster
from bench.harness.hosts import ADDRESSES, NET, PLATFORM_ADDRESS, PORT_POSTGRES, PORT_REDIS, Hosts, address, missing
from bench.harness.platform import Admin
from bench.harness.receiver import Receiver

KINDS = ("automated", "staff", "connected")
PRODUCTS = {"automated": "address-verification", "staff": "appraisal", "connected": "disclosure-delivery"}
FAULTS = ("cut", "kill", "broker_restart", "postgres_restart", "slow", "status", "callback_late", "callback_twice")
FAULTS += ("receiver_down", "receiver_hang")
ASKED = ("worker_cut", "web_stop")  # drawn only when --faults names them (each takes half a minute or more)
RESTARTS = ("broker_restart", "postgres_restart")
PORT_RECEIVER = 8138
SEND_TIMEOUT = 2.0  # the connector's send timeout in the drill; a hanging receiver waits longer
UPLOAD_PAUSE = 1.5 * LEASE_SECONDS  # worker_cut: how long the platform holds each upload meanwhile
STAFF, STAFF_PASSWORD = "drill.staff", "drill-staff-pw-7431"


def draw(seed: int, *, orders: int, faults=FAULTS, rate: float = 1.0, every: float = 15.0, each=False) -> dict:
    """The schedule of `seed`: when each order comes and of what kind, which fault when and for how
    long (at least 3 faults, one per `every` seconds of orders on average, overlapping as they
    fall; with `each`, each of `faults` once, in that order, evenly spaced, each one after the
    previous ended). Everything random in
    the drill is drawn here, from one generator."""
    rng = random.Random(seed)
    span = orders / rate
    kinds = [KINDS[n % len(KINDS)] for n in range(orders)]  # as many of each kind, in a drawn order
    rng.shuffle(kinds)
    made = [{"n": n, "kind": kind, "at": round(rng.uniform(0, span), 2)} for n, kind in enumerate(kinds)]
    drawn = []
    count = len(faults) if each else max(3, round(span / every)) if faults else 0
    for number in range(count):
        kind = faults[number] if each else rng.choice(faults)
        at = round(span * (number + 1) / (count + 1) if each else rng.uniform(0, span), 2)
        fault = {"kind": kind, "at": at, "for": round(rng.uniform(2, 12), 1)}
        if kind in ("cut", "kill"):
            fault["host"] = rng.choice(("wk1", "wk2", "web1", "web2"))
        elif kind in ("worker_cut", "web_stop"):
            fault["host"] = rng.choice(("wk1", "wk2") if kind == "worker_cut" else ("web1", "web2"))
            fault["count"] = rng.randint(12, 30) if kind == "web_stop" else None
        elif kind == "slow":
            fault["latency"] = round(rng.uniform(0.2, 0.8), 2)
        elif kind == "status":
            fault |= {"status": rng.choice((429, 503)), "count": rng.randint(2, 8)}
            fault["endpoint"] = rng.choice(("transaction", "response", "resources", "upload", "event", "token"))
        elif kind == "callback_late":
            fault["latency"] = round(rng.uniform(2, 8), 1)
        elif kind == "callback_twice":
            fault["count"] = rng.randint(1, 4)
        drawn.append(fault)
    drawn = drawn if each else sorted(drawn, key=lambda f: f["at"])
    plan = {"seed": seed, "orders": sorted(made, key=lambda o: o["at"]), "faults": drawn}
    return plan | ({"each": True} if each else {})


def retried(act, *, timeout: float = 180.0, wait: float = 0.5):
    """`act()` until it returns without raising (a database or host away for a while), or `timeout`."""
    from django.db import close_old_connections, connection

    deadline = time.monotonic() + timeout
    while True:
        try:
            return act()
        except Exception:
            if time.monotonic() > deadline:
                raise
            with contextlib.suppress(Exception):
                connection.close()
            close_old_connections()
            time.sleep(wait)


@contextlib.contextmanager
def platform_fault(endpoint: str, **rule):
    """The sandbox's fault rule (`fault_set`: latency, a status, how many calls) on `endpoint` for the block."""
    from partner.sandbox.faults import fault_set
    from partner.sandbox.models import FaultRule

    made = retried(lambda: fault_set(endpoint=endpoint, **rule))
    try:
        yield
    finally:
        retried(lambda: FaultRule.objects.filter(pk=made.pk).update(active=False))


class Schedule:
    """One run: the hosts (a Cluster), the actors, the faults, and the history they write."""

    def __init__(self, plan: dict, *, broker: str):
        self.plan, self.broker = plan, broker
        self.hosts = Hosts()
        # A quick platform ("slow" faults add to it); the cluster's environment with the schedule's own.
        self.drill = Cluster(self.hosts, api_ms=20, upload_ms=50, extra_env=self._env)
        self.answers, self.pulled, self.faults, self.orders = [], [], [], []
        self.done, self.lock, self.client = threading.Event(), threading.Lock(), None
        self.locks = {name: threading.Lock() for name in (*ADDRESSES, "db")}

    def _env(self, env: dict) -> dict:
        if self.broker == "redis":  # the Redis of the cache holds the broker too (another database)
            env["CELERY_BROKER_URL"] = f"{self.hosts.urls.cache[:-2]}/2"
        env |= {"CONNECTOR_RETRY_BACKOFF": "0.5", "CONNECTOR_RETRY_BACKOFF_MAX": "4"}
        env["REQUESTS_CA_BUNDLE"] = str(self.hosts.scratch / "receiver.pem")  # the receiver's, self-made
        # The receiver is on the drill's private bridge: a partner's system inside its own network.
        env["CONNECTOR_ENDPOINT_NETWORKS"] = f"{NET}.0/24"
        return env | {"CONNECTOR_SEND_TIMEOUT": str(SEND_TIMEOUT), "CONNECTOR_RELAY_INTERVAL": "0.5"}

    # Setting up -------------------------------------------------------------------------------

    def start(self) -> None:
        if self.broker == "redis":
            self.hosts.rabbitmq_start = lambda **_: 0.0
        self.certificate = (self.hosts.scratch / "receiver.pem", self.hosts.scratch / "receiver.key")
        openssl = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj"]
        openssl += [f"/CN={PLATFORM_ADDRESS}"]
        openssl += ["-addext", f"subjectAltName=IP:{PLATFORM_ADDRESS}", "-keyout", str(self.certificate[1])]
        subprocess.run([*openssl, "-out", str(self.certificate[0])], check=True, capture_output=True)
        self.drill.start()
        command = self.drill.command
        command("product_settings", PRODUCTS["staff"], "--turnaround-hours", "48", "--fulfiller", "staff_worked")
        command("product_settings", PRODUCTS["connected"], "--fulfiller", "connected")
        command("staff_account", STAFF, "--email", "drill.staff@partner.example", stdin=STAFF_PASSWORD)
        # The connected orders' system, over https as an endpoint must be (its certificate trusted by the workers).
        bind, hang_s = (PLATFORM_ADDRESS, PORT_RECEIVER), SEND_TIMEOUT + 1  # hanging: past the send timeout
        self.receiver = Receiver(self.connected_answer, bind=bind, tls=self.certificate, hang_s=hang_s)
        endpoint = ["--endpoint", self.receiver.url, "--product", PRODUCTS["connected"]]
        printed = command("connection_create", "schedule", *endpoint, capture=True)
        self.created = dict(line.split("=", 1) for line in printed.splitlines() if "=" in line)
        self.receiver.verify_with(self.created["SIGNING_SECRET"])

    # The actors -------------------------------------------------------------------------------

    def api(self, *, renew: bool = False):
        """A client of the partner's system: its one token (asked once, and again after a 401, as the
        token endpoint limits how often it is asked) on a session of the caller's own."""
        import requests

        from tests.helpers.connector import ApiClient

        with self.lock:
            if self.client is None or renew:
                args = (self.hosts.urls.balancer, self.created["CLIENT_ID"], self.created["CLIENT_SECRET"])
                self.client = retried(lambda: ApiClient(*args))
        client = copy.copy(self.client)
        client.session = requests.Session()
        client.session.headers.update(self.client.session.headers)
        return client

    def answer(self, who: str, txn: str, text: str, send) -> None:
        """`send()` (one answer, the same key or form each try) until it is accepted or refused for good."""
        deadline, status = time.monotonic() + 240, None
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                status = send()
                if status < 500 and status != 429:
                    break
            time.sleep(0.5)
        accepted = status in (200, 201, 302)
        self.answers.append({"txn": txn, "who": who, "text": text, "status": status, "accepted": accepted})

    def connected_answer(self, order_id: int) -> None:
        """The partner system on order.created: acknowledge, a status update, the final delivery (its
        answers named by the order's id, their transaction's found in the final rows)."""
        api, mark, txn = self.api(), uuid.uuid4().hex[:8], f"order {order_id}"

        def post(path, **body):
            key = str(uuid.uuid4())
            return lambda: api.post(f"/orders/{order_id}{path}", key=key, json=body).status_code

        self.answer("api", txn, "", post("/acknowledge"))
        self.answer("api", txn, f"update {mark}", post("/status-updates", text=f"update {mark}"))
        self.answer("api", txn, f"final {mark}", post("/deliveries", final=True, message=f"final {mark}"))

    def staff_work(self) -> None:
        """The scripted staff member: every staff-worked order, once in the staff's open queue, taken,
        a status update and the final delivery, each form sent as its page's button sends it over
        HTTP (bench/harness/platform.Admin; a retry sends the same form, its `once` key kept)."""
        admin = retried(lambda: Admin(self.hosts.urls.balancer, STAFF, STAFF_PASSWORD))
        worked = set()

        def post(page, action, form):
            return lambda: admin.send(page, action, form, check=False).status_code

        while not self.done.is_set():
            for txn in [o["txn"] for o in self.orders if o["kind"] == "staff" and o["txn"] not in worked]:
                with contextlib.suppress(Exception):  # not in the open queue yet (or a host away)
                    page, mark = admin.order_page(txn), uuid.uuid4().hex[:8]
                    worked.add(txn)
                    self.answer("staff-take", txn, "", post(page, "/take/", {}))
                    form = {"status-partner_status": f"staff update {mark}", "status-once": uuid.uuid4().hex}
                    self.answer("staff", txn, f"staff update {mark}", post(page, "/status-update/", form))
                    form = {"deliver-kind": "final", "deliver-partner_status": f"staff final {mark}", "confirmed": "1"}
                    form["deliver-once"] = uuid.uuid4().hex
                    self.answer("staff", txn, f"staff final {mark}", post(page, "/deliver/", form))
            self.done.wait(0.5)

    def pull(self) -> None:
        """The second system: follows the feed's cursor until the drill ends, and a last round after."""
        cursor = 0
        while True:
            last = self.done.is_set()
            with contextlib.suppress(Exception):
                for event, past in self.feed(cursor):
                    self.pulled.append({"position": event["id"], "webhook_id": event["webhook_id"]})
                    cursor = past  # the next round goes on from here
                if last:
                    return
            time.sleep(0.5)

    def order_create(self, kind: str, n=None) -> None:
        (txn,) = retried(lambda: self.drill.orders_create(1, product=PRODUCTS[kind]))
        self.orders.append({"n": n, "kind": kind, "txn": txn})

    # Faults -----------------------------------------------------------------------------------

    def log_line(self) -> int:
        """How many calls the platform's access log holds now (where a fault began or ended in it)."""
        with self.drill.platform_log.open() as handle:
            return sum(1 for line in handle if ACCESS_LINE.match(line))

    def faults_run(self, faults: list[dict]) -> None:
        for fault in faults:
            self.fault_run(fault)

    def fault_run(self, fault: dict) -> None:
        """At its moment, the fault done and undone; where it began, ended and settled in the calls."""
        time.sleep(max(0.0, fault["at"] - (time.monotonic() - self.began)))
        kind, host, hosts, record = fault["kind"], fault.get("host"), self.hosts, dict(fault)
        target = host or ("db" if kind in RESTARTS else kind.split("_")[0])  # the receiver's two: one at a time
        with self.locks.setdefault(target, threading.Lock()):
            record["began"] = round(time.monotonic() - self.began, 2)
            record["line_from"] = self.log_line()
            try:
                if kind == "cut":
                    hosts.cut(host)
                    time.sleep(fault["for"])
                    hosts.reconnect(host)
                elif kind == "kill":
                    hosts.stop(host, sig=signal.SIGKILL)
                    time.sleep(fault["for"])
                    self.drill.worker_start(host) if host.startswith("wk") else self.drill.web_start(host)
                elif kind in RESTARTS:
                    self.restart("postgres" if kind == "postgres_restart" else self.broker)
                elif kind in ("slow", "callback_late", "status"):
                    endpoint = fault.get("endpoint", "webhook" if kind == "callback_late" else "*")
                    rule = {key: fault.get(key) for key in ("status", "count")}
                    with platform_fault(endpoint, latency=fault.get("latency", 0.0), **rule):
                        time.sleep(fault["for"])
                elif kind == "callback_twice":
                    record["sent_again"] = self.callbacks_again(fault["count"])
                elif kind == "worker_cut":
                    record["held"] = self.worker_cut(host, fault["for"])
                elif kind == "web_stop":
                    for number in range(fault["count"]):  # a burst of orders, the host killed a third through
                        if number == fault["count"] // 3:
                            hosts.stop(host, sig=signal.SIGKILL)
                        self.order_create("automated", f"burst {number}")
                    time.sleep(fault["for"])
                    self.drill.web_start(host)
                elif kind in ("receiver_down", "receiver_hang"):
                    self.receiver.mode = kind.removeprefix("receiver_")
                    time.sleep(fault["for"])
                    self.receiver.mode = "up"
            except Exception as exc:  # kept in the history: a fault that could not be done is no pass
                record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            record["ended"] = round(time.monotonic() - self.began, 2)
            record["line_to"] = self.log_line()
            time.sleep(LEASE_SECONDS)  # what the host had in flight has ended by then
            record["line_settled"] = self.log_line()
        self.faults.append(record)

    def worker_cut(self, host: str, seconds: float) -> list[str]:
        """`host` cut off with an upload under way, every upload held UPLOAD_PAUSE meanwhile (longer
        than a lease: the other host keeps its orders only by renewing their leases), back after its
        lease ended. Automated orders, one a second, until it has an upload under way; the orders it
        held, from the platform's access log."""
        with platform_fault("upload", latency=UPLOAD_PAUSE):
            offset, deadline, held = self.drill.platform_log.stat().st_size, time.monotonic() + 60, set()
            while not held and time.monotonic() < deadline:
                self.order_create("automated", "worker_cut")
                time.sleep(1.0)
                held = _in_flight(self.drill.calls(offset), address(host))
            if not held:
                raise RuntimeError(f"{host} started no upload within 60 s")
            time.sleep(1.0)  # its upload under way at the platform
            self.hosts.cut(host)
        time.sleep(max(seconds, UPLOAD_PAUSE + 2 * LEASE_SECONDS))
        self.hosts.reconnect(host)
        return sorted(held)

    def restart(self, name: str) -> None:
        """A server of the database host stopped (PostgreSQL fast, Redis empty) and started again."""
        if name == "rabbitmq":
            self.hosts.rabbitmq_stop()
            self.hosts.rabbitmq_start()
            return
        argv = list(self.hosts.processes[name].popen.args)
        self.hosts.stop(name, sig=signal.SIGINT if name == "postgres" else signal.SIGTERM)
        self.hosts.spawn(name, None, argv)
        self.hosts.wait_port(name, address("db"), PORT_POSTGRES if name == "postgres" else PORT_REDIS)

    def callbacks_again(self, count: int) -> list[str]:
        """The platform calls back twice: `count` event webhooks it delivered, sent once more."""
        from partner.sandbox.models import WebhookDelivery
        from partner.sandbox.webhooks import delivery_schedule

        done = WebhookDelivery.objects.filter(status=WebhookDelivery.Status.DELIVERED, resource_type__contains="event")
        again = list(done.order_by("-id").values_list("pk", "event_id")[:count])
        for pk, _ in again:
            delivery_schedule(delivery_id=pk)
        return [str(event) for _, event in again]

    # The run ----------------------------------------------------------------------------------

    def run(self, *, timeout: float) -> dict:
        self.began = time.monotonic()
        actors = [threading.Thread(target=target, daemon=True) for target in (self.staff_work, self.pull)]
        # A thread per fault, overlapping as they fall; with --each, one thread: one after another.
        batches = [self.plan["faults"]] if self.plan.get("each") else [[fault] for fault in self.plan["faults"]]
        faulting = [threading.Thread(target=self.faults_run, args=(batch,), daemon=True) for batch in batches]
        for thread in actors + faulting:
            thread.start()
        for order in self.plan["orders"]:
            time.sleep(max(0.0, order["at"] - (time.monotonic() - self.began)))
            self.order_create(order["kind"], order["n"])
        for thread in faulting:
            thread.join()
        finished = self.wait(timeout)
        self.done.set()
        for thread in actors:
            thread.join(timeout=60)
        return retried(lambda: self.history(finished))

    def wait(self, timeout: float) -> float | None:
        """Until our status endpoint says every order finished and the receiver took every event of
        the feed (None: `timeout` came first; an event never taken is the checker's to name)."""
        pending, deadline = {order["txn"] for order in self.orders}, time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                pending -= {txn for txn, status in self.drill.statuses(pending).items() if status in FINISHED}
                taken = {push["webhook_id"] for push in self.receiver.pushes if push["answered"] < 300}
                if not pending and {event["webhook_id"] for event in self.events()} <= taken:
                    return round(time.monotonic() - self.began, 1)
            time.sleep(1)
        return None

    def feed(self, after: int = 0):
        """The connection's events after the cursor `after` (`GET /api/v1/events`, page by page), each
        with the cursor past its page; a 401 renews the token and raises."""
        api = self.api()
        while True:
            page = api.get("/events", after=after, limit=100)
            if page.status_code == 401:
                self.api(renew=True)
            page.raise_for_status()
            body = page.json()
            if not body["events"]:
                return
            after = body["next_after"]
            for event in body["events"]:
                yield event, after

    def events(self) -> list[dict]:
        """Every event of the connection, read afresh from the feed."""
        found = []
        for event, _ in self.feed():
            order = event["payload"]["data"]["order"]
            found.append({"webhook_id": event["webhook_id"], "type": event["type"], "position": event["id"]})
            found[-1] |= {"order": order["id"], "version": order["version"]}
        return found

    def history(self, finished) -> dict:
        ids, rows = [order["txn"] for order in self.orders], {}
        for line in self.drill.command("order_show", *ids, capture=True).splitlines():  # our final rows
            if line.startswith("{"):
                row = json.loads(line)
                rows[row.pop("transaction_id")] = row | {"pk": row.pop("id")}
        txns = {f"order {row['pk']}": txn for txn, row in rows.items()}
        answers = [a | {"txn": txns.get(a["txn"], a["txn"])} for a in self.answers if a["who"] != "staff-take"]
        calls = [(c["client"], c["method"], c["path"], c["status"]) for c in self.drill.calls()]
        kinds = {order["txn"]: order["kind"] for order in self.orders}
        return {
            "seed": self.plan["seed"],
            "broker": self.broker,
            "schedule": self.plan,
            "finished_s": finished,
            "orders": self.orders,
            "answers": answers,
            "pushes": self.receiver.pushes,
            "pulled": self.pulled,
            "faults": sorted(self.faults, key=lambda f: f["began"]),
            "calls": calls,
            "hosts": {host: address(host) for host in ADDRESSES},
            "final": {
                "orders": {txn: rows[txn] | {"kind": kinds[txn]} for txn in rows},
                "patches": self.drill.patches(ids),
                "events": self.events(),
            },
        }

    def close(self) -> None:
        self.done.set()
        self.drill.close()
        with contextlib.suppress(Exception):
            self.receiver.close()
        self.hosts.destroy()


def _in_flight(calls: list[dict], client: str) -> set[str]:
    """Orders whose slots `client` asked for and that nobody PATCHed yet: their upload is running."""
    patched = {call["path"] for call in calls if call["method"] == "PATCH"}
    return {
        call["path"].split("/transactions/")[1].split("/")[0]
        for call in calls
        if call["client"] == client
        and call["path"].endswith("/response/resources")
        and call["path"].removesuffix("/resources") not in patched
    }


def schedule(*, seed=None, orders: int = 12, faults=FAULTS, broker="redis", rate: float = 1.0, each=False) -> dict:
    """One run (a process of its own: it configures Django for the drill's hosts); its report, "ok" the verdict."""
    absent = missing()
    if absent:
        print(f"schedule: skipped, this machine lacks {', '.join(absent)}", flush=True)
        return {"ok": False, "skipped": f"this machine lacks {', '.join(absent)}"}
    seed = random.SystemRandom().randrange(10**9) if seed is None else seed
    plan = draw(seed, orders=orders, faults=tuple(faults), rate=rate, each=each)
    print(
        f"schedule seed {seed}: {orders} orders, {len(plan['faults'])} faults ({broker}); replay: --seed {seed}",
        flush=True,
    )
    run = Schedule(plan, broker=broker)
    try:
        run.start()
        history = run.run(timeout=180 + 2 * orders)
    finally:
        run.close()
    history["violations"] = check(history)
    path = stack.LOGS / f"schedule-{seed}.json"
    path.write_text(json.dumps(history, indent=1, default=str))
    done = [" ".join(str(f[key]) for key in ("kind", "host", "error") if f.get(key)) for f in history["faults"]]
    report = {"seed": seed, "orders": orders, "faults": done, "finished_s": history["finished_s"]}
    report |= {key: len(history[key]) for key in ("pushes", "pulled", "answers")}
    refused = [answer for answer in history["answers"] if not answer["accepted"]]  # none expected: shown
    report |= {"refused": refused[:5], "violations": history["violations"][:20], "history": str(path)}
    report["ok"] = not history["violations"] and not any(f.get("error") for f in history["faults"])
    print(f"schedule seed {seed}: {'ok' if report['ok'] else 'FAILED'} {json.dumps(report)}", flush=True)
    return report


def schedule_bench(*, database=None, orders=None, seed=None, faults=None, broker="redis", each=False) -> dict:
    """`bench/run.py --only schedule`: the run in a process of its own (it configures Django itself)."""
    argv = [f"--orders={orders or 12}", f"--broker={broker}"] + ([f"--seed={seed}"] if seed is not None else [])
    argv += ([f"--faults={faults}"] if faults else []) + (["--each"] if each else [])
    return stack.in_own_process("bench.drills.schedule", *argv)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="A randomised fault schedule over the hosts, then the checker")
    parser.add_argument("--seed", type=int, default=None, help="replay this seed (default: a new one, printed)")
    parser.add_argument("--orders", type=int, default=12)
    parser.add_argument("--rate", type=float, default=1.0, help="orders per second")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"the kinds drawn from (default: all but {ASKED})")
    parser.add_argument("--broker", choices=("redis", "rabbitmq"), default="redis")
    parser.add_argument("--each", action="store_true", help="each of --faults once, in that order, evenly spaced")
    parser.add_argument("--output", default="", help="where to write the report (JSON)")
    args = parser.parse_args(argv)
    faults = tuple(name for name in args.faults.split(",") if name)
    unknown = set(faults) - set(FAULTS + ASKED)
    if unknown:
        parser.error(f"unknown faults {sorted(unknown)}; of {FAULTS + ASKED}")
    report = schedule(
        seed=args.seed, orders=args.orders, faults=faults, broker=args.broker, rate=args.rate, each=args.each
    )
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2, default=str))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
