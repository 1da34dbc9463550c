"""The platform at its real latency: orders/s, latency, CPU and memory of one worker host against a
platform that answers in hundreds of milliseconds, beside the same batch against the ~1 ms one.

Two gunicorns serve the application with the sandbox mounted (as bench/end_to_end.py): ours (the
admin, the webhooks the sandbox sends us) and the platform's, as the real platform is another
host's. Two emulators of the platform stand in front of the platform's (`bench/latency_proxy.py`,
each its own asyncio process): one forwards every call at once (the ~1 ms platform of the other benchmarks), the other
answers each API call after `api_ms` and each upload after `upload_ms`, holding no thread while it
waits. Every worker and the platform's references (resourceRef, upload locations) go through one or
the other, so the two batches differ only in the waits.

For each worker model asked (`pools`: "threads:64", "threads:32", "prefork:2", ...) the same batch of orders
runs against the fast emulator and then the slow one, each with a worker started for it:
- `orders_per_s`: completed / (last order completed - first transaction created);
- `webhook_to_patch_p50_ms`/`p99`: the sandbox's `created` webhook -> our PATCH accepted
  (the order's `delivered_at`); all orders arrive at once, so this includes the queue;
- `worker_cpu_ms_per_order`: user+system CPU of every process of the worker, per order;
- `worker_peak_rss_mib`: VmHWM summed over the worker's processes (the worker host's RSS);
- `slow_over_fast`: the slow run's orders/s over the fast run's (target 0.8).

Then the staff's burst (`staff_deliveries`, on the first model asked): that many staff-worked
orders are made by the pipeline (acknowledged at the slow latency), each taken by a staff member
with a PDF attached; then every final delivery is requested, as the admin's deliver button does,
while the worker takes no task, and released to it at once, while a staff member's browser reloads
an order's admin page in a loop. Figures: the time from the release to the last delivery accepted
(the time to make the requests apart, `requests_made_in_s`), against what the waits alone explain (each worker
thread sends its share one after another: ceil(N / concurrency) x (slots + upload + PATCH)), and
the admin page's latency meanwhile.
"""

import contextlib
import math
import subprocess
import threading
import time

from bench import stack
from bench.end_to_end import latencies, sandbox_stack, transactions_start, wait_all_done, worker_ready

# Calls of a staff delivery of one document: the slot request, the upload, the PATCH.
DELIVERY_CALLS = ("api", "upload", "api")


@contextlib.contextmanager
def emulator(upstream_port: int, *, api_ms: float, upload_ms: float, name: str):
    """The platform emulator in its own process; yields its base URL."""
    port = stack.free_port()
    argv = [
        stack.PYTHON,
        "-m",
        "bench.latency_proxy",
        "--port",
        str(port),
        "--upstream",
        f"127.0.0.1:{upstream_port}",
        "--api-ms",
        str(api_ms),
        "--upload-ms",
        str(upload_ms),
    ]
    stack.LOGS.mkdir(parents=True, exist_ok=True)
    log = stack.LOGS / f"{name}.log"
    with log.open("wb") as handle:
        popen = subprocess.Popen(argv, cwd=stack.ROOT, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    process = stack.Process(name=name, popen=popen, log=log, port=port)
    try:
        stack.wait_port(process)
        yield process
    finally:
        process.stop()


def platform_env(env: dict, base: str) -> dict:
    """A worker's environment whose platform is the emulator at `base`."""
    return {**env, "SVC_BASE_URL": f"{base}/sandbox", "SVC_TOKEN_URL": f"{base}/sandbox/oauth2/v1/token"}


def platform_use(base: str) -> None:
    """This process (where the sandbox makes transactions and their webhooks) names the emulator at
    `base` in the references it hands out."""
    from django.conf import settings

    settings.SANDBOX_BASE_URL = f"{base}/sandbox"


def pool_parse(model: str) -> tuple[str, int]:
    pool, _, concurrency = model.partition(":")
    return pool, int(concurrency or 1)


def batch(*, seed, env: dict, base: str, pool: str, concurrency: int, transactions: int, name: str) -> dict:
    """`transactions` orders through a worker of this model against the emulator at `base`."""
    from django.core.cache import cache

    from config.celery import app
    from partner.sandbox.webhooks import webhook_deliveries_wait

    app.control.purge()
    cache.clear()  # the token too: each batch pays for its own
    platform_use(base)
    worker = stack.celery_start(name, platform_env(env, base), concurrency=concurrency, pool=pool)
    peak = Peak(worker)
    try:
        worker_ready()
        cpu_before = sum(stack.cpu_seconds(pid) for pid in worker.pids())
        peak.start()
        ids, _ = transactions_start(seed, transactions)
        statuses = wait_all_done(ids, timeout=max(180, transactions * 3))
        webhook_deliveries_wait(timeout=30)
        cpu = sum(stack.cpu_seconds(pid) for pid in worker.pids()) - cpu_before
        rss = peak.stop()
    finally:
        worker.stop()
    figures = latencies(ids)
    span = figures["span_s"]
    return {
        "order_statuses": statuses,
        "span_s": round(span, 2) if span else None,
        "orders_per_s": round(figures["completed"] / span, 2) if span else 0.0,
        "webhook_to_patch_p50_ms": figures["webhook_to_response_p50_ms"],
        "webhook_to_patch_p99_ms": figures["webhook_to_response_p99_ms"],
        "worker_cpu_ms_per_order": round(cpu * 1000 / transactions, 1),
        "worker_peak_rss_mib": rss,
        "worker_processes": len(worker.pids()) if worker.popen.poll() is None else None,
    }


class Peak:
    """The worker host's peak RSS: VmHWM of each of its processes, summed, sampled while it runs (a
    prefork child replaced meanwhile keeps its figure)."""

    def __init__(self, worker: stack.Process):
        self.worker = worker
        self.seen: dict[int, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.done.wait(0.5):
            self._read()

    def _read(self) -> None:
        for pid in self.worker.pids():
            kib = stack.peak_rss_kib(pid)
            if kib:
                self.seen[pid] = max(kib, self.seen.get(pid, 0))

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> float:
        self._read()
        self.done.set()
        self.thread.join()
        return round(sum(self.seen.values()) / 1024, 1)


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
    models = {}
    with contextlib.ExitStack() as stack_of:
        seed, web, env, _ = stack_of.enter_context(
            sandbox_stack(database=database, web_workers=web_workers, name="latency")
        )
        # The platform's own server: the sandbox's API behind the emulators is served apart from our
        # web server (the admin, our webhooks), as the real platform is another host's.
        platform_web = stack.gunicorn_start("latency-platform-web", "config.wsgi", env, workers=web_workers)
        stack_of.callback(platform_web.stop)
        fast = stack_of.enter_context(emulator(platform_web.port, api_ms=0, upload_ms=0, name="latency-platform-fast"))
        slow = stack_of.enter_context(
            emulator(platform_web.port, api_ms=api_ms, upload_ms=upload_ms, name="latency-platform-slow")
        )
        for model in pools:
            pool, concurrency = pool_parse(model)
            runs = {}
            for label, platform in (("fast", fast), ("slow", slow)):
                runs[label] = batch(
                    seed=seed,
                    env=env,
                    base=platform.url,
                    pool=pool,
                    concurrency=concurrency,
                    transactions=transactions,
                    name=f"latency-worker-{pool}-{concurrency}-{label}",
                )
            fast_rate = runs["fast"]["orders_per_s"]
            runs["slow_over_fast"] = round(runs["slow"]["orders_per_s"] / fast_rate, 3) if fast_rate else None
            models[model] = runs
        staff = None
        if staff_deliveries:
            pool, concurrency = pool_parse(pools[0])
            staff = staff_burst(
                seed=seed,
                env=env,
                web=web,
                base=slow.url,
                pool=pool,
                concurrency=concurrency,
                deliveries=staff_deliveries,
                delays={"api": api_ms / 1000, "upload": upload_ms / 1000},
            )
    return {
        "platform": {"api_ms": api_ms, "upload_ms": upload_ms, "fast": "the same emulator, no wait"},
        "transactions": transactions,
        "models": models,
        "staff": staff,
    }


def staff_burst(
    *, seed, env: dict, web: stack.Process, base: str, pool: str, concurrency: int, deliveries: int, delays: dict
) -> dict:
    """`deliveries` staff deliveries requested at once; their time against the waits' share, and the
    admin's order page meanwhile."""
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from django.core.files.uploadedfile import SimpleUploadedFile

    from config.celery import app
    from partner.catalog.models import Product
    from partner.catalog.product_cache import catalog_cache_drop
    from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus
    from partner.fulfillment.staff import services as staff

    product = "address-verification"
    Product.objects.filter(name=product).update(fulfiller="staff_worked", turnaround_hours=48)
    catalog_cache_drop()
    app.control.purge()
    cache.clear()
    platform_use(base)
    user = get_user_model().objects.create_superuser("bench.staff", "bench.staff@partner.example", "bench-pw-12345")
    worker = stack.celery_start(
        f"latency-staff-{pool}-{concurrency}", platform_env(env, base), concurrency=concurrency, pool=pool
    )
    try:
        worker_ready()
        ids, _ = transactions_start(seed, deliveries)
        acknowledged = _wait(
            lambda: (
                Order.objects.filter(
                    transaction_id__in=ids,
                    status=OrderStatus.WITH_STAFF,
                    deliveries__kind=DeliveryKind.ACKNOWLEDGEMENT,
                    deliveries__state__in=[DeliveryState.SENT, DeliveryState.CONFIRMED],
                ).count()
                >= deliveries
            ),
            timeout=deliveries * 3,
        )
        orders = list(Order.objects.filter(transaction_id__in=ids).values_list("pk", flat=True))
        for order_id in orders:
            staff.order_take(order_id=order_id, user=user)
            report = SimpleUploadedFile("report.pdf", b"%PDF-1.7\n% the appraisal report\n" + b"0" * 20_000)
            staff.document_attach(order_id=order_id, upload=report, user=user)
        page = AdminPage(web.url, user, orders[0])
        page.start()
        # "At once": the worker stops taking tasks while the 200 requests are made (the admin's form
        # work, one after another in this process, is no part of sending them), then takes them all.
        queue = app.conf.task_default_queue
        app.control.cancel_consumer(queue, reply=True, timeout=10)
        made = time.monotonic()
        for order_id in orders:
            staff.delivery_request(order_id=order_id, final=True, user=user, partner_status="Report attached")
        requested_s = time.monotonic() - made
        started = time.monotonic()
        app.control.add_consumer(queue, reply=True, timeout=10)
        finals = Delivery.objects.filter(order_id__in=orders, kind=DeliveryKind.FINAL)
        sent = _wait(
            lambda: finals.filter(state__in=[DeliveryState.SENT, DeliveryState.CONFIRMED]).count() >= len(orders),
            timeout=deliveries * 3,
        )
        elapsed = time.monotonic() - started
        pages = page.stop()
        states = _states(finals)
    finally:
        worker.stop()
    waits = sum(delays[kind] for kind in DELIVERY_CALLS)
    explained = math.ceil(len(orders) / concurrency) * waits
    return {
        "deliveries": len(orders),
        "acknowledged_first": acknowledged,
        "all_sent": sent,
        "delivery_states": states,
        "requests_made_in_s": round(requested_s, 2),
        "burst_s": round(elapsed, 2),
        "latency_explains_s": round(explained, 2),
        "over_latency": round(elapsed / explained, 2),
        "admin_page": pages,
    }


def _states(deliveries) -> dict:
    from collections import Counter

    return dict(Counter(deliveries.values_list("state", flat=True)))


def _wait(done, *, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done():
            return True
        time.sleep(0.2)
    return False


class AdminPage:
    """A staff member's browser reloading an order's admin page in a loop, over HTTP, as they would."""

    def __init__(self, base: str, user, order_id: int):
        from django.conf import settings
        from django.test import Client
        from django.urls import reverse

        client = Client()
        client.force_login(user)  # a real session in the database (and cache): the server reads it
        self.cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        self.url = base + reverse("admin:fulfillment_stafforder_change", args=[order_id])
        self.timings: list[float] = []
        self.statuses: dict[int, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._load, daemon=True)

    def _load(self) -> None:
        import requests

        with requests.Session() as session:
            session.trust_env = False
            while not self.done.is_set():
                began = time.monotonic()
                answer = session.get(self.url, headers={"Cookie": self.cookie}, allow_redirects=False, timeout=30)
                self.timings.append(time.monotonic() - began)
                self.statuses[answer.status_code] = self.statuses.get(answer.status_code, 0) + 1
                self.done.wait(0.1)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> dict:
        self.done.set()
        self.thread.join(timeout=60)
        return {
            "loads": len(self.timings),
            "statuses": self.statuses,
            "p50_ms": stack.ms(stack.percentile(self.timings, 0.5)),
            "p99_ms": stack.ms(stack.percentile(self.timings, 0.99)),
        }
