"""Open panels polling: what N lender panels, each polling its order's progress, cost us and the service.

One gunicorn server runs the application with the sandbox mounted (as the end-to-end bench does).
This bench plays the hosts: it creates N loans and N origins in the sandbox (lender.demo, the demo
product), reads each origin once through our origin proxy (`GET /v1/origins/{id}` with
X-Partner-Access-Token) for its panel session, and gives each loan one order (an order written
with the ORM, in every state a panel shows: completed with its report, in progress, delivered,
with staff and three deliveries, failed). Then N pollers (`bench/panel_load.py`, its own process)
ask `GET /ui/transactions/{id}` with X-Panel-Session: at the page's pace (every 3 s) and in a
closed loop. Figures per phase:

- polls answered (by status), polls/s, p50/p99/max latency (from when each poll was due);
- service calls during the phase: requests under /sandbox/ in the server's access log (must be 0);
- statements per poll: `pg_stat_database` transactions of the bench database over the phase
  (autocommit: one per statement, the CONN_HEALTH_CHECKS `SELECT 1` included) per poll;
- gunicorn CPU (master and workers) and PostgreSQL CPU (the database's backends) per poll.

And, in this process over Django's WSGI handler against the same database, the ORM queries of one
poll of each panel (`CaptureQueriesContext`): the target is at most 2.

The work runs in a child process (`python -m bench.panels --run ...`) so that its Django set-up
never meets that of the caller (bench/run.py configures Django for other benchmarks).

    .venv/bin/python bench/panels.py                  # its own database, 100 panels, 20 s per phase
    .venv/bin/python bench/panels.py --panels 20 --seconds 5
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import pg_cost, stack  # noqa: E402

PRODUCT = "address-verification"
LENDER = "lender.demo"
LENDER_PASSWORD = "demo-password-1"  # noqa: S105 - the sandbox's demo lender (partner/sandbox/demo.py)
# What each panel's order is, by panel number modulo 10.
KINDS = ("completed",) * 5 + ("in_progress", "in_progress", "delivered", "with_staff", "failed")


def panels_bench(
    *, database: str, panels: int = 100, seconds: float = 20, interval: float = 3.0, web_workers: int = 4
) -> dict:
    """N open panels polling against `database` (migrated; origins, loans and orders are added to it).

    Returns {"panels", "server", "queries_per_poll": {...}, "setup": {...}, "paced": {...},
    "closed_loop": {...}}; prints nothing.
    """
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "panels.json"
        argv = [stack.PYTHON, "-m", "bench.panels", "--run", "--database", database, "--output", str(output)]
        argv += ["--panels", str(panels), "--seconds", str(seconds), "--interval", str(interval)]
        argv += ["--web-workers", str(web_workers)]
        subprocess.run(argv, cwd=stack.ROOT, check=True)
        return json.loads(output.read_text())


def _world_open(*, base: str, count: int) -> tuple[list[dict], dict]:
    """The sandbox's demo, N loans with an origin each, their panel sessions (through the proxy), their orders."""
    import time
    import urllib.request

    from partner.catalog.models import PartnerAccount
    from partner.catalog.services import partner_account_set, products_pull
    from partner.sandbox.models import Loan
    from partner.sandbox.origins import origin_create
    from partner.sandbox.seeding import sandbox_seed

    seed = sandbox_seed(public_base_url=base)
    partner_account_set(username=LENDER, password=LENDER_PASSWORD, company="DEMO01")
    products_pull()
    account = PartnerAccount.objects.get(username=LENDER)
    template = seed.loans[0].data
    panels, proxy_ms = [], []
    for number in range(count):
        loan_number = f"PANEL-{number:05d}"
        loan = Loan.objects.create(
            instance=seed.instance, guid=str(uuid.uuid4()), data={**template, "loanNumber": loan_number}
        )
        origin = origin_create(user=seed.users[LENDER], loan=loan, product=seed.products[PRODUCT])
        request = urllib.request.Request(  # noqa: S310 - our own server, over http
            f"{base}/v1/origins/{origin.origin_id}",
            headers={"X-Partner-Access-Token": origin.partner_access_token, "Accept": "application/json"},
        )
        began = time.monotonic()
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - our own server
            body = json.loads(answer.read())
        proxy_ms.append((time.monotonic() - began) * 1000)
        kind = KINDS[number % len(KINDS)]
        transaction_id = f"panel-{number:05d}-{uuid.uuid4().hex[:8]}"
        _order_write(transaction_id=transaction_id, loan_number=loan_number, account=account, kind=kind)
        panels.append(
            {"path": f"/ui/transactions/{transaction_id}", "token": body["panelSession"]["token"], "kind": kind}
        )
    return panels, {
        "origins_read_through_proxy": count,
        "proxy_p50_ms": round(stack.percentile(proxy_ms, 0.5), 1),
        "proxy_max_ms": round(max(proxy_ms), 1),
    }


def _order_write(*, transaction_id: str, loan_number: str, account, kind: str) -> None:
    """One order as its webhook, its worker and (for a staff-worked one) its staff left it.

    Long because it writes every kind of order a panel shows, each with the rows its poll reads.
    """
    from datetime import timedelta

    from django.utils import timezone

    from partner.fulfillment.models import (
        Delivery,
        DeliveryKind,
        DeliveryState,
        FailureCode,
        Order,
        OrderStatus,
    )

    now = timezone.now()
    fields = {
        "transaction_id": transaction_id,
        "product_name": PRODUCT,
        "loan_number": loan_number,
        "ordered_by": account,
        "reference_number": f"AV-{transaction_id[-8:].upper()}",
        "request_type": "NEW_REQUEST",
        "prepared_at": now - timedelta(minutes=5),
    }
    finding = {"label": "ZIP code", "before": "94105", "after": "94105", "changed": "No"}
    response = {"partnerStatus": "Address verified", "status": "completed"}
    if kind == "completed":
        fields |= {"status": OrderStatus.REQUEST_COMPLETED, "delivered_at": now, "completed_at": now}
        fields |= {"response": response, "findings": [finding] * 4}
    elif kind == "in_progress":
        fields |= {"status": OrderStatus.IN_PROGRESS}
    elif kind == "delivered":
        fields |= {"status": OrderStatus.RESPONSE_DELIVERED, "delivered_at": now, "response": response}
        fields |= {"findings": [finding] * 4}
    elif kind == "with_staff":
        fields |= {"status": OrderStatus.WITH_STAFF, "staff_worked": True, "due_at": now + timedelta(days=2)}
        fields |= {"response": {"partnerStatus": "Order received"}}
    else:
        fields |= {"status": OrderStatus.FAILED, "failed_at": now, "failure_code": FailureCode.ORDER_REFUSED}
        fields |= {"failure_reason": "The property address could not be found."}
    order = Order.objects.create(**fields)
    if kind in ("completed", "delivered"):
        result = Delivery.objects.create(
            order=order, kind=DeliveryKind.RESULT, sequence=1, sent_at=now,
            state=DeliveryState.CONFIRMED if kind == "completed" else DeliveryState.SENT,
        )  # fmt: skip
        order.attachments.create(
            position=0, name="report.pdf", mime_type="application/pdf", size=20480, resource_id="res-report",
            uploaded_at=now, file=f"documents/{transaction_id}/0-report.pdf", delivery=result,
        )  # fmt: skip
    if kind == "with_staff":
        for sequence, delivery_kind in enumerate(
            (DeliveryKind.ACKNOWLEDGEMENT, DeliveryKind.STATUS_UPDATE, DeliveryKind.PARTIAL), start=1
        ):
            delivery = Delivery.objects.create(
                order=order, kind=delivery_kind, state=DeliveryState.SENT, sequence=sequence, sent_at=now,
                partner_status=f"Step {sequence}",
            )  # fmt: skip
            if delivery_kind == DeliveryKind.PARTIAL:
                for position in (1, 2):
                    order.attachments.create(
                        position=position, name=f"part-{position}.pdf", mime_type="application/pdf", size=4096,
                        resource_id=f"res-part-{position}", delivery=delivery, uploaded_at=now,
                    )  # fmt: skip


def _queries_per_poll(panels: list[dict]) -> dict:
    """ORM queries of one poll of each panel, in this process over Django's WSGI handler."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_HOST="127.0.0.1")
    counts, by_kind, statuses = [], {}, Counter()
    for panel in panels:
        client.get(panel["path"], HTTP_X_PANEL_SESSION=panel["token"])  # warm: the connection is open
        with CaptureQueriesContext(connection) as queries:
            response = client.get(panel["path"], HTTP_X_PANEL_SESSION=panel["token"])
        statuses[response.status_code] += 1
        counts.append(len(queries))
        by_kind[panel["kind"]] = max(by_kind.get(panel["kind"], 0), len(queries))
    return {
        "polls": len(counts),
        "statuses": dict(statuses),
        "max": max(counts),
        "mean": round(sum(counts) / len(counts), 2),
        "max_by_order_kind": by_kind,
        "target_max": 2,
        "met": max(counts) <= 2 and set(statuses) == {200},
    }


def _sandbox_calls(log: Path, offset: int) -> tuple[Counter, int]:
    """(service calls by kind, polls) in the access log after `offset`."""
    from bench.end_to_end import call_kind

    kinds, polls = Counter(), 0
    with log.open() as handle:
        handle.seek(offset)
        for line in handle.read().splitlines():
            method, _, rest = line.strip().partition(" ")
            path = rest.rsplit(" ", 1)[0]
            if path.startswith("/sandbox/"):
                kinds[call_kind(method, path)] += 1
            elif path.startswith("/ui/transactions/"):
                polls += 1
    return kinds, polls


def _phase(*, web: stack.Process, database: str, panels: list[dict], seconds: float, interval: float, log: Path):
    """One polling phase: the pollers in their own process, and what it cost the service, gunicorn and PostgreSQL."""
    pg_cost.stats_settle()
    offset = log.stat().st_size
    xacts_before = pg_cost.transactions(database)
    web_before, pg_before = pg_cost.pids_cpu_ns(web.pids()), pg_cost.backends_cpu_ns(database)
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "in.json", Path(folder) / "out.json"
        source.write_text(json.dumps([[panel["path"], panel["token"]] for panel in panels]))
        argv = [stack.PYTHON, "-m", "bench.panel_load", "--port", str(web.port), "--input", str(source)]
        argv += ["--output", str(target), "--seconds", str(seconds), "--interval", str(interval)]
        subprocess.run(argv, cwd=stack.ROOT, check=True)
        result = json.loads(target.read_text())
    web_ns = pg_cost.pids_cpu_ns(web.pids()) - web_before
    pg_ns = pg_cost.cpu_spent(pg_before, pg_cost.backends_cpu_ns(database))
    pg_cost.stats_settle()
    statements = pg_cost.transactions(database) - xacts_before
    calls, logged = _sandbox_calls(log, offset)
    statuses = Counter(status for status, _, _ in result["polls"])
    latencies = [latency for _, latency, _ in result["polls"]]
    answered = statuses.get(200, 0)
    return {
        "interval_s": interval or None,
        "pollers": len(panels),
        "seconds": round(result["elapsed"], 2),
        "polls": len(latencies),
        "polls_answered_200": answered,
        "statuses": {str(code): count for code, count in sorted(statuses.items())},
        "polls_per_s": round(answered / result["elapsed"], 1),
        "p50_ms": stack.ms(stack.percentile(latencies, 0.5)),
        "p99_ms": stack.ms(stack.percentile(latencies, 0.99)),
        "max_ms": stack.ms(max(latencies) if latencies else None),
        "polls_in_access_log": logged,
        "service_calls": sum(calls.values()),
        "service_calls_by_kind": dict(calls),
        "statements_per_poll": round(statements / logged, 2) if logged else None,
        "gunicorn_cpu_ms_per_poll": pg_cost.per(web_ns, logged),
        "postgres_cpu_ms_per_poll": pg_cost.per(pg_ns, logged),
        "generator_cpu_s": round(result["generator_cpu_seconds"], 2),
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
    }


def _run(*, database: str, panels: int, seconds: float, interval: float, web_workers: int) -> dict:
    """The bench itself, in the child process."""
    from bench.end_to_end import django_setup

    port = stack.free_port()
    base = f"http://127.0.0.1:{port}"
    # Connections kept beyond the run, so that the backends' CPU is all counted (pg_cost); the
    # origin rate limit out of the way of one bench address reading 100 origins.
    extra = {"DATABASE_CONN_MAX_AGE": 3600, "RATELIMIT_ORIGIN": "100000/m"}
    env = stack.app_env(database=database, public_base_url=base, sandbox=True, settings="bench.settings", **extra)
    django_setup(env)
    stack.LOGS.mkdir(parents=True, exist_ok=True)
    log = stack.LOGS / "panels-access.log"
    log.write_text("")
    web = stack.gunicorn_start("panels-web", "config.wsgi", env, workers=web_workers, port=port, access_log=log)
    try:
        world, setup = _world_open(base=base, count=panels)
        queries = _queries_per_poll(world)
        phases = {
            "paced": _phase(web=web, database=database, panels=world, seconds=seconds, interval=interval, log=log),
            "closed_loop": _phase(web=web, database=database, panels=world, seconds=seconds, interval=0, log=log),
        }
    finally:
        web.stop()
    return {
        "panels": panels,
        "server": f"gunicorn config.wsgi (sandbox mounted), {web_workers} workers",
        "orders_by_kind": dict(Counter(panel["kind"] for panel in world)),
        "setup": setup,
        "queries_per_poll": queries,
        **phases,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panels", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval", type=float, default=3.0)
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--run", action="store_true", help="(internal) run in this process")
    parser.add_argument("--database", help="(with --run) the database URL")
    parser.add_argument("--output", type=Path, help="(with --run) where to write the result")
    args = parser.parse_args(argv)
    sizes = {"panels": args.panels, "seconds": args.seconds, "interval": args.interval}
    if args.run:
        result = _run(database=args.database, web_workers=args.web_workers, **sizes)
        args.output.write_text(json.dumps(result, indent=2))
        return 0
    stack.services_check()
    database = stack.database_recreate()
    stack.redis_flush()
    env = stack.app_env(database=database, public_base_url="http://127.0.0.1:9", sandbox=False)
    stack.manage("migrate", "--no-input", "-v", "0", env=env)
    result = panels_bench(database=database, web_workers=args.web_workers, **sizes)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
