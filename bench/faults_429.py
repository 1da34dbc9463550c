"""End-to-end throughput when the service answers 429 (Retry-After: 10) to a third of the calls.

The end-to-end run of bench/end_to_end.py (`run_once`: gunicorn with the sandbox, a Celery
worker of 2 processes, N transactions created at once) twice on the same server: without a
fault, then with a sandbox fault rule (partner/sandbox/faults.py, `fault_set`) on each of the
five endpoints an order calls (#2 transaction, #4 slots, #5 upload, #3 response PATCH, #6
event): status 429, `Retry-After: 10`, rate 1/3 (each call drawn independently). The token
endpoint is left alone: it is not one of the five calls.

Throughput per run, from the database afterwards: completed / (last order completed - first
transaction created), end_to_end's definition. All N orders are created at once. With the
fault every order waits at least 10 s for each 429 it meets (about 2.3 on average, up to 6 in a
row before the task gives up), so the run's span is the larger of the work (N orders at the
worker's rate) and the slowest orders' chain of waits (60-100 s): N must be large enough that
the work fills the span. The run ends when every order is final or nothing is left to do (an
order whose callback task gave up stays RESPONSE_DELIVERED): `run_once` would wait its whole
timeout for such an order.

While each run lasts, the worker's processes are sampled 5 times a second: their kernel wait
channel (`/proc/<pid>/wchan`; `hrtimer_nanosleep` is a `time.sleep`, `pipe_read` a pool child
waiting for its next task) and state, so a process that sleeps on the service shows as such.
Also counted: the sandbox's answers by status (the 429s), the fulfill and callback tasks' runs,
and the orders' final states.

"""

import threading
import time
from collections import Counter
from pathlib import Path

from bench import stack
from bench.end_to_end import sandbox_stack

FAULT_ENDPOINTS = ("transaction", "resources", "upload", "response", "event")
FAULT_RATE = 1 / 3
RETRY_AFTER_S = 10
SAMPLE_EVERY_S = 0.2


class WorkerSampler(threading.Thread):
    """Samples the wait channel and state of every process of the named Celery worker, with times."""

    def __init__(self, hostname: str):
        super().__init__(daemon=True)
        self.hostname = hostname
        self.stopping = threading.Event()
        self.samples: list[tuple[float, str, list[str], int]] = []  # (monotonic, main, children, queue)

    def _main_pid(self) -> int | None:
        marker = f"--hostname={self.hostname}@".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes():
                    return int(entry.name)
            except OSError:
                continue
        return None

    @staticmethod
    def _where(pid: int) -> str | None:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            channel = Path(f"/proc/{pid}/wchan").read_text().strip() or "-"
        except OSError:
            return None
        return "running" if state == "R" else channel

    def run(self) -> None:
        import redis

        broker = redis.Redis.from_url(stack.redis_url(stack.BROKER_DB))
        main = None
        while not self.stopping.wait(SAMPLE_EVERY_S):
            main = main or self._main_pid()
            where = self._where(main) if main else None
            if where is None:
                main = None
                continue
            children = [child for child in map(self._where, stack.children(main)) if child]
            self.samples.append((time.monotonic(), where, children, int(broker.llen("celery"))))

    def figures(self, *, start: float, end: float) -> dict:
        """Where the worker's processes were between `start` and `end` (monotonic)."""
        main, children = Counter(), Counter()
        idle_with_work = all_idle = 0
        for when, where, kids, queued in self.samples:
            if start <= when <= end:
                main[where] += 1
                children.update(kids)
                if kids and all("pipe_read" in kid for kid in kids):
                    all_idle += 1
                    idle_with_work += queued > 0
        total = sum(children.values())
        asleep = sum(count for where, count in children.items() if "nanosleep" in where)
        # A prefork child waiting for its next task reads its pipe from the main process.
        idle = sum(count for where, count in children.items() if "pipe_read" in where)
        return {
            "samples": sum(main.values()),
            "pool_children_by_wait_channel": dict(children.most_common(8)),
            "pool_children_in_sleep_share": round(asleep / total, 4) if total else None,
            "pool_children_waiting_for_a_task_share": round(idle / total, 4) if total else None,
            "main_process_by_wait_channel": dict(main.most_common(5)),
            # Every pool child waiting for a task while messages wait on the broker's queue: what a
            # worker whose slots are held (prefetched ETA messages) would show.
            "samples_all_children_idle": all_idle,
            "samples_all_children_idle_with_queue_not_empty": idle_with_work,
        }


def _settled_wait(ids: list[str], *, timeout: float, quiet_s: float) -> float:
    """Wait until every order is final, or until nothing moved for `quiet_s` (longer than any task's
    countdown: an order whose callback task gave up stays RESPONSE_DELIVERED until the inbox's
    periodic sweep, which the bench does not run); returns when the last move was seen."""
    from django.db.models import Sum

    from partner.fulfillment.models import Order, OrderStatus
    from partner.inbox.models import Notification

    final = [OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED]
    deadline, last, moved = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        orders = Order.objects.filter(transaction_id__in=ids)
        done = orders.filter(status__in=final).count()
        if done >= len(ids):
            return time.monotonic()
        signature = (
            done,
            orders.count(),
            orders.aggregate(runs=Sum("attempts"))["runs"],
            Notification.objects.aggregate(runs=Sum("attempts"))["runs"],
        )
        if signature != last:
            last, moved = signature, time.monotonic()
        elif time.monotonic() - moved >= quiet_s:
            return moved
        time.sleep(0.25)
    return time.monotonic()


def _rates(ids: list[str]) -> dict:
    """Throughput from the database: completed / (last completed - first created), and the spread."""
    from partner.fulfillment.models import Order
    from partner.inbox.models import Notification
    from partner.platform.urns import event_resource_type
    from partner.sandbox.models import Transaction

    created = min(Transaction.objects.filter(id__in=ids).values_list("created_at", flat=True))
    rows = list(Order.objects.filter(transaction_id__in=ids).values_list("completed_at", "attempts", "delivered_at"))
    completed = sorted(done for done, _, _ in rows if done)
    delivered = sorted(at for _, _, at in rows if at)
    attempts = [count for _, count, _ in rows]
    callbacks = list(
        Notification.objects.filter(
            resource_type=event_resource_type(), received_at__gte=created, resource_ref__contains="/events/"
        ).values_list("resource_ref", "attempts", "state")
    )
    ours = [(count, state) for ref, count, state in callbacks if ref.split("/transactions/")[1].split("/")[0] in ids]
    result = {
        "completed": len(completed),
        "fulfill_task_runs_per_order": round(sum(attempts) / max(1, len(attempts)), 2),
        "fulfill_task_runs_max": max(attempts, default=0),
        "callback_task_runs_per_callback": round(sum(c for c, _ in ours) / max(1, len(ours)), 2),
        "callbacks_by_state": dict(Counter(state for _, state in ours)),
    }
    if completed:
        span = (completed[-1] - created).total_seconds()
        median = completed[len(completed) // 2]
        result.update(
            {
                "span_s": round(span, 2),
                "transactions_per_s": round(len(completed) / span, 2) if span > 0 else None,
                "first_completed_after_s": round((completed[0] - created).total_seconds(), 2),
                "half_completed_after_s": round((median - created).total_seconds(), 2),
                # After the 90th percentile completion, how long the last tenth took:
                "last_tenth_s": round((completed[-1] - completed[int(0.9 * (len(completed) - 1))]).total_seconds(), 2),
            }
        )
    if len(delivered) >= 10:
        # The responses delivered (our PATCH landed) per second between the 10th and 90th percentile
        # delivery: the pipeline's rate once started and before its tail. Completions are no use for
        # this: the callbacks queue behind the burst's fulfill tasks, so most complete at the end.
        low, high = int(0.1 * (len(delivered) - 1)), int(0.9 * (len(delivered) - 1))
        window = (delivered[high] - delivered[low]).total_seconds()
        result["delivered_middle_per_s"] = round((high - low) / window, 2) if window > 0 else None
    return result


def _cpu(web: stack.Process, worker: stack.Process) -> dict:
    return {
        "celery_worker": sum(stack.cpu_seconds(pid) for pid in worker.pids()),
        "web_and_emulated_platform": sum(stack.cpu_seconds(pid) for pid in web.pids()),
    }


def fault_run(
    *,
    seed,
    web,
    env: dict,
    access_log: Path,
    transactions: int,
    label: str,
    concurrency: int = 2,
    quiet_s: float = 45.0,
) -> dict:
    """One end-to-end run as bench/end_to_end.py's `run_once` (same worker, same orders, same counts),
    waiting until nothing is left to do rather than for every order to be final, and sampling the
    worker's processes.

    Long because it is one measurement: every figure is taken between the same start and stop of
    the worker, as in `run_once`.
    """
    from django.core.cache import cache

    from bench.end_to_end import access_log_calls, latencies, transactions_start, worker_ready
    from config.celery import app
    from partner.fulfillment.models import Order
    from partner.sandbox.webhooks import webhook_deliveries_wait

    app.control.purge()
    cache.clear()  # no token yet: the run's own token requests are counted
    hostname = f"faults-worker-{concurrency}"
    worker = stack.celery_start(hostname, env, concurrency=concurrency)
    sampler = WorkerSampler(hostname)
    sampler.start()
    try:
        worker_ready()
        offset = access_log.stat().st_size
        cpu_before = _cpu(web, worker)
        started = time.monotonic()
        ids, created_s = transactions_start(seed, transactions)
        settled = _settled_wait(ids, timeout=max(300, transactions * 2), quiet_s=quiet_s)
        webhook_deliveries_wait(timeout=30)
        cpu_after = _cpu(web, worker)
        kinds, codes = access_log_calls(access_log, offset)
    finally:
        sampler.stopping.set()
        sampler.join(timeout=5)
        worker.stop()
    orders = Order.objects.filter(transaction_id__in=ids)
    statuses = dict(Counter(orders.values_list("status", flat=True)))
    failures = dict(Counter(orders.filter(status="FAILED").values_list("failure_code", flat=True)))
    tokens = kinds.pop("token", 0)
    calls = sum(count for kind, count in kinds.items() if kind not in ("host", "other"))
    figures = latencies(ids)
    return {
        "label": label,
        "worker_processes": concurrency,
        "transactions": transactions,
        "creation_s": round(created_s, 2),
        "order_statuses": statuses,
        "all_completed": statuses.get("REQUEST_COMPLETED", 0) == transactions,
        "failure_codes": failures,
        **_rates(ids),
        "webhook_to_completed_p50_ms": figures["webhook_to_completed_p50_ms"],
        "webhook_to_completed_p99_ms": figures["webhook_to_completed_p99_ms"],
        "service_call_statuses": dict(codes),
        "answered_429": int(codes.get("429", 0)),
        "service_calls_by_kind": dict(kinds),
        "service_calls_per_transaction": round(calls / transactions, 2),
        "token_requests": tokens,
        "cpu_ms_per_transaction": {
            part: round((cpu_after[part] - cpu_before[part]) * 1000 / transactions, 1) for part in cpu_before
        },
        "active_s": round(settled - started, 2),
        "worker_sampling": sampler.figures(start=started, end=settled),
    }


def faults_429_bench(
    *, database: str, transactions: int = 1500, lifetime: int = 3600, task_max_retries: int | None = None
) -> dict:
    """A fault-free run and a run with 429 (Retry-After 10) on a third of the calls; their ratio.

    `task_max_retries` (what-if only) sets CELERY_TASK_MAX_RETRIES for both runs' worker.
    Returns {"fault", "fault_free", "with_429", "ratio", "ratio_delivered_middle"}: each run's
    figures (`fault_run`), transactions/s with the fault over transactions/s without, and the same
    for the responses delivered per second between the 10th and 90th percentile delivery.
    """
    extra = {} if task_max_retries is None else {"CELERY_TASK_MAX_RETRIES": task_max_retries}
    # Longer than the longest countdown of a task's last retry (partner/core/retries.py: a ceiling of
    # 2 s doubled per retry, at most 300 s), so that "nothing moved" means "nothing left to do".
    quiet_s = 10 + max(RETRY_AFTER_S, min(300, 2 * 2 ** ((task_max_retries or 5) - 1)))
    with sandbox_stack(database=database, lifetime=lifetime, name="faults") as (seed, web, env, access_log):
        from partner.sandbox.faults import fault_set, faults_clear

        env = {**env, **{key: str(value) for key, value in extra.items()}}
        faults_clear()
        runs = {}
        for key, label in (("fault_free", "fault-free"), ("with_429", "429 on a third of the calls")):
            if key == "with_429":
                for endpoint in FAULT_ENDPOINTS:
                    fault_set(endpoint=endpoint, status=429, rate=FAULT_RATE, retry_after=RETRY_AFTER_S)
                time.sleep(1.5)  # every sandbox process re-reads its rules at most once a second
            try:
                runs[key] = fault_run(
                    seed=seed,
                    web=web,
                    env=env,
                    access_log=access_log,
                    transactions=transactions,
                    label=label,
                    quiet_s=quiet_s,
                )
            finally:
                faults_clear()
    free, faulted = runs["fault_free"]["transactions_per_s"], runs["with_429"].get("transactions_per_s")
    return {
        "fault": {
            "endpoints": list(FAULT_ENDPOINTS),
            "status": 429,
            "rate": round(FAULT_RATE, 4),
            "retry_after_s": RETRY_AFTER_S,
            "task_max_retries": task_max_retries,
        },
        **runs,
        "ratio": round(faulted / free, 3) if free and faulted else None,
        "ratio_delivered_middle": (
            round(runs["with_429"]["delivered_middle_per_s"] / runs["fault_free"]["delivered_middle_per_s"], 3)
            if runs["fault_free"].get("delivered_middle_per_s") and runs["with_429"].get("delivered_middle_per_s")
            else None
        ),
    }
