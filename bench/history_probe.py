"""One database's in-process costs for the history bench: the relay, every periodic job, automated orders.

Run as a child of `bench/history.py` (`python -m bench.history_probe --database URL --output F`), so
that each database gets a process of its own, configured like a worker (production settings, the
bench's Redis broker and cache), and the two databases can be measured turn about. It measures:

- `relay`: `notifications_relay` rounds (200 a round) over every `received` notification, that is
  the webhooks the intake phase just stored: cost per notification;
- `jobs`: every periodic job, each run `--reps` times after one warm run (the inbox relay's idle
  round, the lease hand-backs, the inbox and order sweeps, staff overdue, the reconciliation's
  cheap pass against a fake transaction list built from the database's own orders, the retention
  purge, the /metrics scrape, /healthz/ready and the dashboard's queries): cost per run;
- `orders`: `--orders` automated orders from their `created` webhook to their completion, in this
  process against a fake of the service (tests/fakes.py): intake, relay, processing, fulfilment,
  callback (the steps of tests/fulfillment/test_order_budget.py): cost per order.

Before measuring, it ANALYZEs the history's tables, as autovacuum would, while the intake's webhooks
still wait for the relay (the planner then takes `received` rows for common: the case that turned
the relay's idle round into a walk of the whole primary key, see the notes). After relaying them it
marks them processed, as the workers would, so that the backlog the jobs count is a live system's.

Each cost is the median over the runs of this process's CPU, the CPU of its PostgreSQL backend
(`/proc/<pid>/schedstat`), the wall time and the statements sent. With `--explain`, every statement
of every job is explained on this database (`bench/history_plans.py`).
"""

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pg_cost, stack  # noqa: E402

PRODUCT = "address-verification"
LENDER_CREDENTIALS = {"username": "lender.demo", "password": "demo-password-1", "companyCode": "DEMO01"}
LOAN = {
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"}
}
HISTORY_TABLES = (
    "inbox_notification",
    "fulfillment_order",
    "fulfillment_orderstep",
    "fulfillment_orderdocument",
    "fulfillment_delivery",
)


def _setup(database: str) -> None:
    import django

    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    env["MEDIA_ROOT"] = str(stack.LOGS / "media")  # the orders' PDF reports: not in the working tree
    os.environ.update(env)
    django.setup()


class Meter:
    """Costs of a block: this process's CPU, its PostgreSQL backend's CPU, wall time, statements."""

    def __init__(self, capture: list | None = None):
        self.capture = capture
        self.samples: list[dict] = []

    def _wrapper(self, execute, sql, params, many, context):
        self._statements += 1
        if self.capture is not None:
            self.capture.append((sql, params))
        return execute(sql, params, many, context)

    @contextmanager
    def measure(self):
        from django.db import connection

        with connection.cursor() as cursor:  # opens the connection if a job closed it
            cursor.execute("SELECT pg_backend_pid()")
            (backend,) = cursor.fetchone()
        self._statements = 0
        cpu, pg, wall = time.process_time_ns(), pg_cost.cpu_ns(backend), time.perf_counter_ns()
        with connection.execute_wrapper(self._wrapper):
            yield
        self.samples.append(
            {
                "cpu_ms": (time.process_time_ns() - cpu) / 1e6,
                "pg_cpu_ms": (pg_cost.cpu_ns(backend) - pg) / 1e6,
                "wall_ms": (time.perf_counter_ns() - wall) / 1e6,
                "statements": self._statements,
            }
        )
        self.capture = None  # the first run's statements only

    def median(self, per: int = 1) -> dict:
        return {
            key: round(statistics.median(sample[key] for sample in self.samples) / per, 3)
            for key in ("cpu_ms", "pg_cpu_ms", "wall_ms", "statements")
        }


def _catalog_ensure() -> None:
    """The demo product with its credential definitions, and lender.demo's partner account."""
    from partner.catalog.models import CredentialDefinition, Product
    from partner.catalog.services import partner_account_set

    product, created = Product.objects.get_or_create(
        name=PRODUCT,
        defaults={
            "service_id": f"prod-{PRODUCT}",
            "request_types": ["NEW_REQUEST"],
            "fulfiller": "address_verification",
        },
    )
    if created:
        definitions = [
            {"key": "username", "scope": "user", "required": True},
            {"key": "password", "scope": "user", "required": True, "secret": True},
            {"key": "companyCode", "scope": "company"},
        ]
        for position, definition in enumerate(definitions):
            CredentialDefinition.objects.create(product=product, position=position, **definition)
        partner_account_set(username="lender.demo", password="demo-password-1", company="DEMO01")


def _analyze() -> None:
    """Fresh planner statistics, as autovacuum keeps them: the intake just added thousands of rows,
    and to a table of a few hundred rows that changes the plans."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE " + ", ".join(HISTORY_TABLES))


def _relay_measure() -> dict:
    from django.utils import timezone

    from partner.inbox.models import Notification, NotificationState
    from partner.inbox.outbox import notifications_relay

    waiting = Notification.objects.filter(state=NotificationState.RECEIVED).count()
    meter = Meter()
    with meter.measure():
        moved = 0
        while True:
            count = notifications_relay(limit=200)
            moved += count
            if not count:
                break
    # What the workers would do next (none runs here): process them, so that the backlog the periodic
    # jobs count stays what a live system has (the seeded in-flight rows), not every webhook of the run.
    now = timezone.now()
    Notification.objects.filter(state=NotificationState.QUEUED, updated_at__lte=now).update(
        state=NotificationState.PROCESSED, processed_at=now, updated_at=now
    )
    return {"notifications": moved, "waiting_before": waiting, **meter.median(per=max(1, moved))}


class FakeList:
    """The service's transaction list (#7) as the reconciliation reads it: our orders, oldest first."""

    def __init__(self):
        from partner.fulfillment.models import FINAL_STATUSES, Order

        rows = Order.objects.order_by("pk").values_list("transaction_id", "status")
        product = {"name": PRODUCT}
        self.items = [
            {"id": tid, "status": "completed" if status in FINAL_STATUSES else "processing", "product": product}
            for tid, status in rows
        ]
        self.position = {item["id"]: index for index, item in enumerate(self.items)}

    def page(self, start: int = 0, limit: int = 50):
        from partner.platform.types import Page

        return Page(items=self.items[start : start + limit], total=len(self.items), start=start, limit=limit)

    def state_reset(self) -> None:
        """Where a cheap pass finds the list: read to its end, a full pass done now, the awaiting watched."""
        from django.utils import timezone

        from partner.fulfillment.models import ReconciliationState
        from partner.fulfillment.orders.selectors import orders_awaiting_confirmation
        from partner.fulfillment.recovery.reconciliation import STATE_NAME

        awaiting = orders_awaiting_confirmation().values_list("transaction_id", flat=True)
        watched = {tid: self.position[tid] for tid in awaiting if tid in self.position}
        ReconciliationState.objects.update_or_create(
            name=STATE_NAME,
            defaults={
                "position": len(self.items),
                "marker": [item["id"] for item in self.items[-10:]],
                "watched": watched,
                "full_pass_at": timezone.now(),
            },
        )


def jobs() -> dict:
    """name -> (the job, its runs): every periodic query of the application."""
    from partner.core.health import health_warnings
    from partner.core.leases import leases_expired_hand_back
    from partner.core.retention import purge_run
    from partner.fulfillment.dashboard import orders_awaiting_confirmation_count, orders_open_too_long, orders_window
    from partner.fulfillment.orders.metrics import orders_collect
    from partner.fulfillment.recovery.reconciliation import orders_sweep, transactions_reconcile
    from partner.fulfillment.staff.notices import overdue_tell
    from partner.inbox.metrics import inbox_collect
    from partner.inbox.outbox import notifications_relay, notifications_sweep
    from partner.inbox.selectors import inbox_backlog

    def dashboard():
        orders_window(days=14)
        inbox_backlog()
        orders_awaiting_confirmation_count()
        list(orders_open_too_long()[:50])

    return {
        "relay_idle_round (every 0.2 s, each worker)": (lambda: notifications_relay(limit=200), 20),
        "leases_hand_back (every 5 s, each worker)": (leases_expired_hand_back, 20),
        "inbox.sweep (every 30 s)": (notifications_sweep, 20),
        "fulfillment.sweep (every 30 s)": (orders_sweep, 20),
        "fulfillment.overdue (every 300 s)": (overdue_tell, 20),
        "fulfillment.reconcile cheap pass (every 300 s)": (transactions_reconcile, 10),
        "core.purge (daily)": (purge_run, 3),
        "metrics scrape (/metrics)": (lambda: (list(inbox_collect()), list(orders_collect())), 20),
        "healthz/ready": (lambda: health_warnings(ready=True), 20),
        "admin dashboard": (dashboard, 5),
    }


def _jobs_measure(*, reps: int, captured: dict) -> dict:
    from django.core.cache import cache
    from pytest import MonkeyPatch

    from partner.platform import client

    fake = FakeList()
    results = {}
    with MonkeyPatch.context() as patch:
        patch.setattr(client, "list_transactions_page", fake.page)
        for name, (job, runs) in jobs().items():
            runs = min(runs, reps)
            captured[name] = []
            meter = Meter()
            for run in range(runs + 1):
                if "reconcile" in name:
                    fake.state_reset()
                if run == 1:
                    meter.samples.clear()  # the first run warms; its statements are the ones explained
                meter.capture = captured[name] if run == 0 else None
                with meter.measure():
                    job()
            results[name] = {"runs": runs, **meter.median()}
        cache.clear()
    return results


def _webhook(resource_type: str, resource_id: str, resource_ref: str) -> bytes:
    document = {
        "eventId": f"bench-{uuid.uuid4().hex}",
        "eventTime": "2026-11-24T10:00:00Z",
        "eventType": "created",
        "meta": {
            "resourceType": resource_type,
            "resourceId": resource_id,
            "instanceId": PRODUCT,
            "resourceRef": resource_ref,
        },
    }
    return json.dumps(document).encode()


def _orders_measure(*, orders: int) -> dict:
    """Automated orders from webhook to completion, against a fake of the service; cost per order."""
    from django.conf import settings
    from pytest import MonkeyPatch

    from partner.fulfillment.models import Order, OrderStatus
    from partner.inbox.dispatch import notification_process
    from partner.inbox.intake import webhook_receive
    from partner.inbox.outbox import notifications_relay
    from partner.platform.signatures import signature_compute
    from partner.platform.urns import event_resource_type, response_processed_event_type, transaction_resource_type
    from tests.fakes import FakePlatform

    secret = settings.SVC_SIGNING_SECRETS[0]

    def receive(body: bytes) -> int:
        return webhook_receive(body=body, signature=signature_compute(body, secret), headers={}, remote_addr="10.0.0.1")

    meter, completed = Meter(), 0
    with MonkeyPatch.context() as patch:
        fake = FakePlatform().install(patch)
        for number in range(orders + 1):  # the first one warms (the credential check is remembered after it)
            txn, event = f"bench-order-{uuid.uuid4().hex[:12]}", f"bench-evt-{uuid.uuid4().hex[:12]}"
            ref = f"{settings.SVC_BASE_URL}/partner/v2/transactions/{txn}"
            request = {"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS}
            fake.transaction_add(txn, request=request, product_name=PRODUCT)
            fake.events[(txn, event)] = response_processed_event_type()
            if number == 1:
                meter.samples.clear()
            with meter.measure():
                created = receive(_webhook(transaction_resource_type(), txn, ref))
                notifications_relay()
                notification_process(notification_id=created)  # the order's work runs in this task
                processed = receive(_webhook(event_resource_type(), event, f"{ref}/events/{event}"))
                notifications_relay()
                notification_process(notification_id=processed)
            order = Order.objects.get(transaction_id=txn)
            completed += order.status == OrderStatus.REQUEST_COMPLETED
    return {"orders": orders, "completed": completed - 1, **meter.median()}


def probe(*, database: str, reps: int, orders: int, explain: bool) -> dict:
    _setup(database)
    _catalog_ensure()
    _analyze()
    captured: dict[str, list] = {}
    result = {
        "relay": _relay_measure(),
        "jobs": _jobs_measure(reps=reps, captured=captured),
        "orders": _orders_measure(orders=orders),
    }
    if explain:
        from bench.history_plans import plans_explain

        result["plans"] = plans_explain(captured)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--orders", type=int, default=20)
    parser.add_argument("--explain", action="store_true")
    args = parser.parse_args(argv)
    result = probe(database=args.database, reps=args.reps, orders=args.orders, explain=args.explain)
    args.output.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
