"""Benchmark 3 and 4: end-to-end fulfillment, and peak memory of the web and worker processes.

One gunicorn server runs the application with the sandbox mounted (the
service's emulator); Celery workers (`celery -A config worker`, prefork, 1 and
then 2 processes) fulfill. This process plays the platform: it creates N
transactions in the sandbox, whose `created` webhooks go out from the
sandbox's own thread pool, and waits until every order is completed.

Figures per run:
- transactions/s: N / (last order completed - first transaction created);
- webhook-to-response latency: sandbox webhook created -> our PATCH landed
  (order.delivered_at), and -> completed (order.completed_at, after the
  processed callback);
- service calls per transaction: counted on the sandbox's side from the
  server's access log (every request it served under /sandbox/, token
  endpoint apart), so no instrumentation inside the workers is needed;
- token requests: POSTs to the token endpoint in the run (the token cache is
  emptied before each run, so one is expected per token lifetime);
- peak RSS (VmHWM) of each gunicorn worker and each Celery process.
"""

import contextlib
import math
import os
import re
import time
from collections import Counter
from pathlib import Path

from bench import stack

SANDBOX_CALL = re.compile(r"^(?P<method>[A-Z]+) (?P<path>/sandbox/\S*) (?P<status>\d{3})$")


def call_kind(method: str, path: str) -> str:
    if path.endswith("/oauth2/v1/token"):
        return "token"
    if path.startswith("/sandbox/uploads/"):
        return "upload"
    if path.endswith("/response/resources"):
        return "slots"
    if path.endswith("/response"):
        return "patch"
    if "/events/" in path:
        return "event"
    if "/transactions/" in path:
        return "transaction"
    if path.startswith("/sandbox/host-api/") or path.startswith("/sandbox/host/"):
        return "host"
    return "other"


def access_log_calls(access_log: Path, offset: int) -> tuple[Counter, Counter]:
    """(calls by kind, statuses) of the sandbox requests in a gunicorn access log after `offset`."""
    time.sleep(1.0)  # the access log is written after each answer
    with access_log.open() as handle:
        handle.seek(offset)
        text = handle.read()
    kinds, statuses = Counter(), Counter()
    for line in text.splitlines():
        match = SANDBOX_CALL.match(line.strip())
        if match:
            kinds[call_kind(match["method"], match["path"])] += 1
            statuses[match["status"]] += 1
    return kinds, statuses


def django_setup(env: dict) -> None:
    """Configure this process like the servers (same database, cache, broker, sandbox address)."""
    import django

    for key in (
        "DJANGO_SETTINGS_MODULE",
        "DJANGO_READ_DOT_ENV_FILE",
        "DJANGO_DEBUG",
        "DJANGO_SECRET_KEY",
        "DJANGO_ALLOWED_HOSTS",
        "DJANGO_SECURE_SSL_REDIRECT",
        "FIELD_ENCRYPTION_KEYS",
        "SANDBOX_ENABLED",
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "CELERY_RESULT_BACKEND",
        "CACHE_URL",
        "PUBLIC_BASE_URL",
        "SVC_BASE_URL",
        "SVC_TOKEN_URL",
        "SVC_SIGNING_SECRETS",
        "SVC_CLIENT_SECRET",
        "LOG_LEVEL",
        "SANDBOX_TOKEN_LIFETIME",
    ):
        if key in env:
            os.environ[key] = env[key]
    from django.apps import apps

    if apps.ready:  # a later stack in the same process (bench/run.py): the settings were read once
        from django.conf import settings

        for key in ("PUBLIC_BASE_URL", "SVC_BASE_URL", "SVC_TOKEN_URL"):
            if key in env:
                setattr(settings, key, env[key])
        return
    django.setup()


def worker_ready(timeout: float = 60) -> None:
    from config.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if app.control.ping(timeout=0.5):
            return
    raise RuntimeError("the Celery worker did not answer a ping")


def wait_all_done(ids: list[str], *, timeout: float) -> dict:
    from partner.fulfillment.models import Order, OrderStatus

    deadline = time.monotonic() + timeout
    final = [OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED]
    while time.monotonic() < deadline:
        done = Order.objects.filter(transaction_id__in=ids, status__in=final).count()
        if done >= len(ids):
            break
        time.sleep(0.2)
    return dict(Counter(Order.objects.filter(transaction_id__in=ids).values_list("status", flat=True)))


def latencies(ids: list[str]) -> dict:
    from partner.fulfillment.models import Order
    from partner.sandbox.models import Transaction, WebhookDelivery

    sent = dict(WebhookDelivery.objects.filter(resource_id__in=ids).values_list("resource_id", "created_at"))
    created = list(Transaction.objects.filter(id__in=ids).values_list("created_at", flat=True))
    to_response, to_completed, completed = [], [], []
    for txn, delivered_at, completed_at in Order.objects.filter(transaction_id__in=ids).values_list(
        "transaction_id", "delivered_at", "completed_at"
    ):
        start = sent.get(txn)
        if start and delivered_at:
            to_response.append((delivered_at - start).total_seconds())
        if start and completed_at:
            to_completed.append((completed_at - start).total_seconds())
            completed.append(completed_at)
    span = (max(completed) - min(created)).total_seconds() if completed and created else None
    return {
        "span_s": span,
        "webhook_to_response_p50_ms": stack.ms(stack.percentile(to_response, 0.5)),
        "webhook_to_response_p99_ms": stack.ms(stack.percentile(to_response, 0.99)),
        "webhook_to_completed_p50_ms": stack.ms(stack.percentile(to_completed, 0.5)),
        "webhook_to_completed_p99_ms": stack.ms(stack.percentile(to_completed, 0.99)),
        "completed": len(completed),
    }


def transactions_start(seed, transactions: int) -> tuple[list[str], float]:
    """The platform's side: `transactions` orders of the demo lender created in the sandbox, each
    sending its signed webhook; their ids and how long creating them took."""
    from partner.sandbox.transactions import transaction_create

    started = time.monotonic()
    ids = [
        transaction_create(
            product=seed.products["address-verification"], user=seed.users["lender.demo"], loan=seed.loans[2]
        ).id
        for _ in range(transactions)
    ]
    return ids, time.monotonic() - started


def run_once(
    *, seed, web: stack.Process, access_log, env: dict, concurrency: int, transactions: int, lifetime: int
) -> dict:
    """One run: `transactions` orders through a worker of `concurrency` processes, and its figures.

    Long because it is one measurement: every figure is taken between the same
    start and stop of the worker, and the result is the report's row as it is.
    """
    from django.core.cache import cache

    from config.celery import app
    from partner.sandbox.webhooks import webhook_deliveries_wait

    app.control.purge()
    cache.clear()  # no token yet: the run's own token requests are counted
    worker = stack.celery_start(f"bench-worker-{concurrency}", env, concurrency=concurrency)
    try:
        worker_ready()
        offset = access_log.stat().st_size
        cpu_before = _cpu(web, worker)
        ids, created_s = transactions_start(seed, transactions)
        statuses = wait_all_done(ids, timeout=max(120, transactions * 2))
        webhook_deliveries_wait(timeout=30)
        cpu_after = _cpu(web, worker)
        kinds, codes = access_log_calls(access_log, offset)
        figures = latencies(ids)
        memory = {
            "web_workers_kib": [stack.peak_rss_kib(pid) for pid in stack.web_workers(web)],
            "celery_processes_kib": [stack.peak_rss_kib(pid) for pid in worker.pids()],
        }
    finally:
        worker.stop()
    tokens = kinds.pop("token", 0)
    calls = sum(count for kind, count in kinds.items() if kind not in ("host", "other"))
    span = figures.pop("span_s")
    return {
        "worker_processes": concurrency,
        "transactions": transactions,
        "order_statuses": statuses,
        "creation_s": round(created_s, 2),
        "span_s": round(span, 2) if span else None,
        "transactions_per_s": round(figures["completed"] / span, 1) if span else 0.0,
        **figures,
        "service_calls_by_kind": dict(kinds),
        "service_call_statuses": dict(codes),
        "service_calls_per_transaction": round(calls / transactions, 2),
        "token_requests": tokens,
        "token_lifetime_s": lifetime,
        "token_lifetimes_spanned": max(1, math.ceil((span or 0) / lifetime)),
        "peak_rss_kib": memory,
        # Where the machine's CPU went, per fulfilled transaction: our workers; the gunicorn that
        # serves both our intake and the emulated platform; the bench process, which creates the
        # transactions and sends the platform's webhooks; PostgreSQL.
        "cpu_ms_per_transaction": {
            part: round((cpu_after[part] - cpu_before[part]) * 1000 / transactions, 1) for part in cpu_before
        },
    }


def _cpu(web: stack.Process, worker: stack.Process) -> dict:
    return {
        "celery_worker": sum(stack.cpu_seconds(pid) for pid in worker.pids()),
        "web_and_emulated_platform": sum(stack.cpu_seconds(pid) for pid in web.pids()),
        "bench_process_platform_side": time.process_time(),
        "postgresql": stack.cpu_seconds_of_command("postgres"),
    }


@contextlib.contextmanager
def sandbox_stack(*, database: str, web_workers: int = 4, lifetime: int = 3600, name: str = "e2e"):
    """gunicorn with the sandbox mounted, seeded and our catalog pulled: the setup of the end-to-end
    benchmarks (this one, order_cpu, faults_429).

    Yields (seed, web, env, access_log). This process is configured like the servers (Django set up).
    """
    port = stack.free_port()
    base = f"http://127.0.0.1:{port}"
    env = stack.app_env(
        database=database,
        public_base_url=base,
        sandbox=True,
        settings="bench.settings_loopback",  # the sandbox's upload slots are on the loopback, over http
        SANDBOX_TOKEN_LIFETIME=lifetime,
    )
    stack.manage("migrate", "--no-input", "-v", "0", env=env)  # the sandbox's own tables too
    django_setup(env)
    from partner.catalog.services import partner_account_set, products_pull
    from partner.sandbox.seeding import sandbox_seed

    stack.LOGS.mkdir(parents=True, exist_ok=True)
    access_log = stack.LOGS / f"{name}-access.log"
    access_log.write_text("")
    web = stack.gunicorn_start(f"{name}-web", "config.wsgi", env, workers=web_workers, port=port, access_log=access_log)
    try:
        seed = sandbox_seed(public_base_url=base)
        partner_account_set(username="lender.demo", password="demo-password-1", company="DEMO01")
        products_pull()
        yield seed, web, env, access_log
    finally:
        web.stop()


def end_to_end_bench(
    *, database: str, transactions: int, worker_counts=(1, 2), web_workers: int = 4, lifetime: int = 3600
) -> dict:
    runs = {}
    with sandbox_stack(database=database, web_workers=web_workers, lifetime=lifetime) as (seed, web, env, access_log):
        for count in worker_counts:
            runs[str(count)] = run_once(
                seed=seed,
                web=web,
                access_log=access_log,
                env=env,
                concurrency=count,
                transactions=transactions,
                lifetime=lifetime,
            )
    return {"server": f"gunicorn config.wsgi (sandbox mounted), {web_workers} workers", "runs": runs}
