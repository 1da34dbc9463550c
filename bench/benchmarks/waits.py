"""How long people and partner systems wait (docs/performance.md, "How the entries measure")."""

import contextlib
import json
import time
import uuid
from datetime import datetime

import requests

from bench.benchmarks.orders import DELIVERY_CALLS, cpu_by_process, per, pool_parse, spread, staff_burst
from bench.harness import stack
from bench.harness.platform import FINAL, Platform, WorkerHost
from bench.harness.receiver import Receiver

CONNECTED = "disclosure-delivery"
# The platform's calls behind each answer of the receiver: a status update is one PATCH; the final
# delivery with its document asks for a slot, uploads and PATCHes, as a staff delivery does.
ANSWER_CALLS = {"status_update": ("api",), "final": DELIVERY_CALLS}
PDF = b"%PDF-1.7\n% the disclosure\n" + b"0" * 20_000
# The emulated platform serves each of its gunicorn workers' requests in threads: a real platform
# answers a call in its latency, not after the calls before it, so a call that waited in the emulator's
# accept queue behind its 4 sync workers measured the emulator, not a wait of ours
# (docs/performance.md, "How the entries measure").
PLATFORM_THREADS = 8


def answer_waits(answers: list[dict], patches: dict) -> dict:
    """Seconds from each answer's 201 to the first PATCH accepted whose partnerStatus is its text, by kind."""
    accepted = {}
    for found in patches.values():
        for at, payload in found:
            accepted.setdefault(payload.get("partnerStatus"), at)
    waits = {}
    for answer in answers:
        if answer["text"] in accepted:
            waits.setdefault(answer["kind"], []).append(accepted[answer["text"]] - answer["at"])
    return waits


class System(Receiver):
    """A partner's order system: bench/harness/receiver.py answering each order.created through /api/v1/."""

    def __init__(self):
        super().__init__(self.answer)
        self.answers, self.refused, self.retries = [], [], 0

    def connect(self, api: str, secrets: dict) -> None:
        """Its credentials, as printed once at its making; a token by client credentials."""
        self.api = api
        self.verify_with(secrets["SIGNING_SECRET"])
        auth = (secrets["CLIENT_ID"], secrets["CLIENT_SECRET"])
        token = requests.post(f"{api}/oauth/token", data={"grant_type": "client_credentials"}, auth=auth, timeout=30)
        token.raise_for_status()
        self.headers = {"Authorization": f"Bearer {token.json()['access_token']}"}

    def post(self, path: str, **body) -> dict:
        """One answer until it is taken (429 or 5xx: again after the wait asked), its Idempotency-Key kept."""
        headers = {**self.headers, "Idempotency-Key": str(uuid.uuid4())}
        for _ in range(20):
            answer = requests.post(f"{self.api}{path}", headers=headers, timeout=60, **body)
            if answer.status_code != 429 and answer.status_code < 500:
                break
            self.retries += 1
            time.sleep(float(answer.headers.get("Retry-After") or 1))
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"{path} answered {answer.status_code}: {answer.text[:300]}")
        return {"at": time.time(), **answer.json()}

    def answer(self, order: int) -> None:
        """A status update, a document and the final delivery naming it, each text the order's own."""
        try:
            update = self.post(f"/orders/{order}/status-updates", json={"text": f"bench update {order}"})
            document = self.post(f"/orders/{order}/documents", files={"file": ("disclosure.pdf", PDF)})
            final = {"final": True, "message": f"bench final {order}", "documents": [document["id"]]}
            done = self.post(f"/orders/{order}/deliveries", json=final)
        except Exception as exc:  # counted in the figures, not lost in this thread
            self.refused.append(repr(exc)[:300])
            return
        with self.lock:
            self.answers.append({"kind": "status_update", "text": f"bench update {order}", "at": update["at"]})
            self.answers.append({"kind": "final", "text": final["message"], "at": done["at"]})

    def moves(self) -> dict:
        """Seconds from each event's move (its timestamp) to its arrival here, by type."""
        found = {}
        for event, came in self.first.values():
            moved = datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
            found.setdefault(event["type"], []).append(came - moved)
        return found


def connection_made(platform: Platform, receiver: System) -> None:
    """A connected product and a connection pushing to `receiver`, as an operator sets them up."""
    stack.manage("product_settings", CONNECTED, "--fulfiller", "connected", env=platform.env, capture=True)
    argv = ("connection_create", "bench-system", "--endpoint", receiver.url, "--product", CONNECTED)
    printed = stack.manage(*argv, env=platform.env, capture=True)
    secrets = dict(line.split("=", 1) for line in printed.splitlines() if "=" in line)
    receiver.connect(f"{platform.ours.url}/api/v1", secrets)


def finished_seen(platform: Platform, ids: list[str], *, timeout: float) -> dict:
    """Each order's moment (epoch) our status endpoint first says it is finished, once it has a PATCH."""
    seen, deadline = {}, time.monotonic() + timeout
    while len(seen) < len(ids) and time.monotonic() < deadline:
        patched = [txn for txn, n in platform.patches([txn for txn in ids if txn not in seen]).items() if n]
        for txn, status in platform.statuses(patched).items():
            if status in FINAL:
                seen[txn] = time.time()
        time.sleep(0.2)
    return seen


def automated(platform: Platform, worker: WorkerHost, count: int) -> dict:
    before = cpu_by_process(platform, worker)
    ids = platform.orders_create(count)
    seen = finished_seen(platform, ids, timeout=max(180, count * 3))
    cpu = per(cpu_by_process(platform, worker), before, count)
    sent, patches = platform.records(ids)
    result = [found[-1][0] - sent[txn] for txn, found in patches.items() if found and txn in sent]
    return {
        "orders": count,
        "finished": len(seen),
        "webhook_to_result_patch": spread(result),
        "webhook_to_confirmed": spread([at - sent[txn] for txn, at in seen.items() if txn in sent]),
        "cpu_ms_per_order": cpu,
    }


def connected(platform: Platform, worker: WorkerHost, receiver: System, count: int) -> dict:
    receiver.first, receiver.pushes, receiver.answers, receiver.refused, receiver.retries = {}, [], [], [], 0
    before = cpu_by_process(platform, worker)
    ids = platform.orders_create(count, product=CONNECTED)
    deadline = time.monotonic() + max(180, count * 3)
    while time.monotonic() < deadline and not receiver.refused:
        with receiver.lock:  # the receiver's threads add to it meanwhile
            types = [event["type"] for event, _ in receiver.first.values()]
        if types.count("order.completed") >= count and types.count("order.delivery.confirmed") >= 2 * count:
            break
        time.sleep(0.2)
    cpu = per(cpu_by_process(platform, worker), before, count)
    answers = answer_waits(receiver.answers, platform.records(ids)[1])
    moves = receiver.moves()
    return {
        "orders": count,
        "answers_refused": receiver.refused[:3],
        "answers_retried": receiver.retries,
        "answer_to_patch": {kind: spread(waits) for kind, waits in answers.items()},
        "move_to_event": {kind: spread(waits) for kind, waits in moves.items()},
        "move_to_event_all": spread([wait for waits in moves.values() for wait in waits]),
        "cpu_ms_per_order": cpu,
    }


def waits_bench(
    *,
    database: str,
    transactions: int = 100,
    staff_deliveries: int = 200,
    api_ms: float = 300,
    upload_ms: float = 500,
    pool: str = "threads:64",
    web_workers: int = 4,
    platform_threads: int = PLATFORM_THREADS,
    sender: bool = True,
) -> dict:
    """The worker host is a worker of `pool` and, with `sender`, a sender beside it (`--sender`, its 8
    threads: docs/deployment.md): the events' tasks never wait for a thread the arrivals hold."""
    runs, kind, threads = {}, *pool_parse(pool)
    with contextlib.ExitStack() as stack_of:
        serving = {"web_workers": web_workers, "platform_threads": platform_threads}
        platform = stack_of.enter_context(Platform(database=database, name="waits", **serving))
        platform.emulators_start(stack_of, api_ms=api_ms, upload_ms=upload_ms)
        receiver = System()
        stack_of.callback(receiver.close)
        connection_made(platform, receiver)
        for label, emulated in zip(("fast", "slow"), platform.emulators, strict=True):
            waits = {"api": api_ms / 1000, "upload": upload_ms / 1000} if label == "slow" else {"api": 0, "upload": 0}
            host = {"pool": kind, "concurrency": threads, "base": emulated.url, "sender": sender}
            worker = platform.worker(f"waits-worker-{label}", **host)
            try:
                run = {"automated": automated(platform, worker, transactions)}
                run["connected"] = connected(platform, worker, receiver, transactions)
            finally:
                worker.stop()
            for answer, calls in ANSWER_CALLS.items():
                run["connected"].setdefault("calls_wait_s", {})[answer] = sum(waits[call] for call in calls)
            if staff_deliveries:
                run["staff"] = staff_burst(
                    platform,
                    pool,
                    base=emulated.url,
                    deliveries=staff_deliveries,
                    waits=waits,
                    browse=False,
                    sender=sender,
                )
            runs[label] = run
            print(f"  {label}: {json.dumps(run)}", flush=True)  # kept should a later part fail
    platform_of = {"api_ms": api_ms, "upload_ms": upload_ms, "web_workers": web_workers, "threads": platform_threads}
    return {"platform": platform_of, "pool": pool, "sender": sender, "runs": runs}
