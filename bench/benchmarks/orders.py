"""`end_to_end` and `latency`, this process the platform (bench/harness/platform.py); docs/performance.md,
"How the entries measure", says what each figure is."""

import contextlib
import math
import threading
import time

from bench.harness import stack
from bench.harness.platform import Admin, Platform, WorkerHost

# Calls of a staff delivery of one document: the slot request, the upload, the PATCH.
DELIVERY_CALLS = ("api", "upload", "api")
STAFF, STAFF_PASSWORD = "bench.staff", "quiet-harbor-lantern-7342"  # noqa: S105 - the bench's own login
REPORT = b"%PDF-1.7\n% the appraisal report\n" + b"0" * 20_000


def pool_parse(model: str) -> tuple[str, int]:
    pool, _, concurrency = model.partition(":")
    return pool, int(concurrency or 1)


def batch(platform: Platform, model: str, *, transactions: int, base: str | None = None, label: str = "") -> dict:
    """`transactions` orders through a worker of `model` calling the platform at `base`; their figures."""
    pool, concurrency = pool_parse(model)
    name = f"{platform.name}-worker-{pool}-{concurrency}{label}"
    worker = platform.worker(name, pool=pool, concurrency=concurrency, base=base)
    peak = Peak(worker)  # the worker host's peak RSS
    try:
        offset, cpu_before = platform.access_log.stat().st_size, cpu_by_process(platform, worker)
        peak.start()
        began = time.monotonic()
        ids = platform.orders_create(transactions)
        statuses, done = platform.orders_wait(ids, timeout=max(180, transactions * 3))
        cpu, rss = cpu_by_process(platform, worker), peak.stop()
    finally:
        worker.stop()
    kinds, answers = platform.calls(offset)
    tokens, span = kinds.pop("token", 0), (done - began) if done else None
    sent, patches = platform.records(ids)  # the first webhook created -> the first PATCH accepted:
    waits = [found[0][0] - sent[txn] for txn, found in patches.items() if found and txn in sent]
    return {
        "order_statuses": statuses,
        "span_s": round(span, 2) if span else None,
        "orders_per_s": round(transactions / span, 2) if span else 0.0,
        "webhook_to_patch_p50_ms": stack.ms(stack.percentile(waits, 0.5)),
        "webhook_to_patch_p99_ms": stack.ms(stack.percentile(waits, 0.99)),
        "cpu_ms_per_order": {part: round((cpu[part] - cpu_before[part]) * 1000 / transactions, 1) for part in cpu},
        "worker_peak_rss_mib": rss,
        "service_calls_by_kind": dict(kinds),
        "service_call_statuses": dict(answers),
        "service_calls_per_order": round(sum(n for kind, n in kinds.items() if kind != "other") / transactions, 2),
        "token_requests": tokens,
        "token_lifetime_s": platform.lifetime,
        "token_lifetimes_spanned": max(1, math.ceil((span or 0) / platform.lifetime)),
    }


def cpu_by_process(platform: Platform, worker: WorkerHost) -> dict:
    """CPU seconds so far of each part: our worker host (its sender's included) and web server, the
    platform (apart), this process, PostgreSQL; and, where the worker host runs a sender, its own apart."""
    found = {
        "worker": stack.cpu_of(worker),
        "our_web": stack.cpu_of(platform.ours),
        "platform_web_and_emulators": stack.cpu_of(platform.web, *platform.emulators),
        "bench_process_platform_side": time.process_time(),
        "postgresql": stack.cpu_seconds_of_command("postgres"),
    }
    if worker.sender:
        found["of_which_sender"] = stack.cpu_of(worker.sender)
    return found


class Peak(threading.Thread):
    """VmHWM of each process of a worker, sampled every 0.5 s until stopped (a prefork child replaced
    meanwhile keeps its figure); `stop` returns their sum in MiB."""

    def __init__(self, worker: WorkerHost):
        super().__init__(daemon=True)
        self.worker, self.seen, self.done = worker, {}, threading.Event()

    def run(self) -> None:
        while True:
            stopping = self.done.wait(0.5)
            for pid in self.worker.pids():
                self.seen[pid] = max(stack.memory_kib(pid) or 0, self.seen.get(pid, 0))
            if stopping:
                return

    def stop(self) -> float:
        self.done.set()
        self.join()
        return round(sum(self.seen.values()) / 1024, 1)


def end_to_end_bench(
    *, database: str, transactions: int = 200, pools=("prefork:1", "prefork:2"), web_workers: int = 4
) -> dict:
    with Platform(database=database, web_workers=web_workers, name="e2e") as platform:
        runs = {model: batch(platform, model, transactions=transactions) for model in pools}
    return {"server": f"gunicorn config.wsgi, {web_workers} workers, ours and the platform's", "runs": runs}


def latency_bench(
    *,
    database: str,
    transactions: int = 200,
    pools: tuple[str, ...] = ("threads:64",),
    api_ms: float = 300,
    upload_ms: float = 500,
    staff_deliveries: int = 200,
    web_workers: int = 4,
) -> dict:
    models, staff = {}, None
    with contextlib.ExitStack() as stack_of:
        platform = stack_of.enter_context(Platform(database=database, web_workers=web_workers, name="latency"))
        fast, slow = platform.emulators_start(stack_of, api_ms=api_ms, upload_ms=upload_ms)
        for model in pools:
            runs = {
                label: batch(platform, model, transactions=transactions, base=emulated.url, label=f"-{label}")
                for label, emulated in (("fast", fast), ("slow", slow))
            }
            fast_rate = runs["fast"]["orders_per_s"]
            runs["slow_over_fast"] = round(runs["slow"]["orders_per_s"] / fast_rate, 3) if fast_rate else None
            models[model] = runs
        if staff_deliveries:
            waits = {"api": api_ms / 1000, "upload": upload_ms / 1000}
            staff = staff_burst(platform, pools[0], base=slow.url, deliveries=staff_deliveries, waits=waits)
    return {
        "platform": {"api_ms": api_ms, "upload_ms": upload_ms, "fast": "the same emulator, no wait"},
        "transactions": transactions,
        "models": models,
        "staff": staff,
    }


def staff_burst(
    platform: Platform, model: str, *, base: str, deliveries: int, waits: dict, browse=True, sender=False
) -> dict:
    """`deliveries` staff deliveries requested at once (docs/performance.md, "How the entries measure"),
    through a worker host of `model` (and a sender beside it, with `sender`)."""
    from config.celery import app, queue_of

    pool, concurrency = pool_parse(model)
    platform.command("staff_account", STAFF, "--email", "bench.staff@partner.example", stdin=STAFF_PASSWORD)
    name = f"latency-staff-{pool}-{concurrency}"
    worker = platform.worker(name, pool=pool, concurrency=concurrency, base=base, sender=sender)
    try:
        ids = platform.orders_create(deliveries, product="appraisal")
        acknowledged = bool(stack.until(lambda: _all_more(platform.patches(ids), {}), timeout=deliveries * 3))
        admin = Admin(platform.ours.url, STAFF, STAFF_PASSWORD)
        pages = [admin.order_page(txn) for txn in ids]
        for page in pages:
            admin.send(page, "/take/", {})
            admin.send(page, "/documents/", {}, files={"upload-files": ("report.pdf", REPORT, "application/pdf")})
        loads = PageLoads(admin, pages[0]) if browse else None
        # "At once": the worker takes no run (the deliveries' tasks) while the requests are made, then
        # takes them all.
        # The worker named: a sender beside it consumes no run (its reply ends the wait).
        queue, worker_only = queue_of(app.conf.task_default_queue, "runs"), {"destination": [worker.node]}
        app.control.cancel_consumer(queue, reply=True, timeout=10, limit=1, **worker_only)
        before, made, cpu_before = platform.patches(ids), time.monotonic(), cpu_by_process(platform, worker)
        for page in pages:
            final = {"deliver-kind": "final", "deliver-partner_status": "Report attached", "confirmed": "Send"}
            admin.send(page, "/deliver/", final)
        requested_s, started, released = time.monotonic() - made, time.monotonic(), time.time()
        app.control.add_consumer(queue, reply=True, timeout=10, limit=1, **worker_only)
        sent = bool(stack.until(lambda: _all_more(platform.patches(ids), before), timeout=deliveries * 3))
        elapsed, admin_page = time.monotonic() - started, loads.stop() if loads else None
        cpu = cpu_by_process(platform, worker)
    finally:
        worker.stop()
    patches = platform.records(ids)[1]
    each = [found[-1][0] - released for txn, found in patches.items() if len(found) > before.get(txn, 0)]
    explained = math.ceil(len(ids) / concurrency) * sum(waits[kind] for kind in DELIVERY_CALLS)
    return {
        "deliveries": len(ids),
        "acknowledged_first": acknowledged,
        "all_sent": sent,
        "requests_made_in_s": round(requested_s, 2),
        "burst_s": round(elapsed, 2),
        "latency_explains_s": round(explained, 2),
        "over_latency": round(elapsed / explained, 2) if explained else None,
        "release_to_patch": spread(each),
        "cpu_ms_per_delivery": per(cpu, cpu_before, len(ids)),
        "admin_page": admin_page,
    }


def per(after: dict, before: dict, count: int) -> dict:
    """CPU ms per item of each process between two `cpu_by_process`, PostgreSQL's left out (its backends end)."""
    return {
        part: round((after[part] - before[part]) * 1000 / max(count, 1), 1) for part in after if part != "postgresql"
    }


def spread(seconds: list[float]) -> dict:
    """p50, p99 and the most of some waits, in milliseconds, and how many."""
    found = {f"p{int(q * 100)}_ms": stack.ms(stack.percentile(seconds, q)) for q in (0.5, 0.99)}
    return {"n": len(seconds), **found, "max_ms": stack.ms(max(seconds)) if seconds else None}


def _all_more(now: dict, before: dict) -> bool:
    return all(count > before.get(txn, 0) for txn, count in now.items())


class PageLoads(threading.Thread):
    """The staff member's browser reloading an order's page in a loop, over HTTP, until stopped."""

    def __init__(self, admin: Admin, page: str):
        super().__init__(daemon=True)
        self.admin, self.page, self.timings, self.statuses, self.done = admin, page, [], {}, threading.Event()
        self.start()

    def run(self) -> None:
        browser = Admin(self.admin.base, cookies=self.admin.cookies)  # the same sign-in, a connection of its own
        while not self.done.is_set():
            began = time.monotonic()
            status = browser.get(self.page).status_code
            self.timings.append(time.monotonic() - began)
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.done.wait(0.1)

    def stop(self) -> dict:
        self.done.set()
        self.join(timeout=60)
        return {"statuses": self.statuses, **spread(self.timings)}  # n: the loads
