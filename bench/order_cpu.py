"""Our worker's CPU per order against a bare order: one automated order's work with no ORM and no Celery.

The bare order is what our Celery worker must at least do for an address verification order,
done by the shortest path against the same gunicorn + sandbox as the end-to-end benchmark:

1. GET the transaction (#2);
2. the fulfiller's work: the same `AddressVerificationFulfiller.fulfill()` the worker calls
   (ZIP code checks, the response, the fpdf2 report), which touches no ORM;
3. POST the upload slot request (#4), `[{"name", "mimeType"}]`;
4. PUT the PDF to the slot's location with the slot's Authorization value (#5);
5. PATCH the response with its `resources` (#3);
6. GET the callback event (#6) the sandbox announced by its processed webhook.

Same bodies and headers as the platform client (compact JSON, `Accept` and `User-Agent`, the
bearer token, the slot's one-time value on the PUT). One OAuth token per run, fetched by this
process and handed to the bare processes, each of which sends every call over one pooled
`requests.Session`. Nothing else: no credential check, no database row per step, no lease, no
broker, no retry layer.

`processes` bare processes (2: the worker's concurrency in the end-to-end run) each do their share
of the orders one after another. Steps 1-5 run for every order, then this process waits (no CPU
counted) until our intake has stored every "processed" notification and hands each bare process
the event ids of its orders for step 6. The CPU per order is the bare processes' user+system time
(`time.process_time`), split into the PDF report, the rest of `fulfill()`, the five HTTP exchanges
and the loop itself. One warm-up order per process (the ZIP code data loaded on first use; fonts;
the first connection) is not counted in `cpu_ms_per_order`; `cpu_ms_per_order_with_warmup`
counts it, as the end-to-end run's fresh worker pays it inside its N orders.
"""

import contextlib
import json
import multiprocessing
import time
from pathlib import Path

from bench import stack

PDF_MIME = "application/pdf"
JSON_TYPE = "application/json"
WARMUP_PER_PROCESS = 1


def _compact(payload) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


class _Clock:
    """CPU seconds of this process, by part (the bare process is single-threaded)."""

    def __init__(self):
        self.parts: dict[str, float] = {}

    @contextlib.contextmanager
    def part(self, name: str):
        started = time.process_time()
        try:
            yield
        finally:
            self.parts[name] = self.parts.get(name, 0.0) + time.process_time() - started


def _bare_session():
    import requests
    from requests.adapters import HTTPAdapter

    session = requests.Session()
    session.trust_env = False
    session.headers["User-Agent"] = "partner-application/0.1 (+python-requests)"
    session.headers["Accept"] = JSON_TYPE
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=4, max_retries=0)
    session.mount("http://", adapter)
    return session


def _answer(response, what: str, statuses: dict):
    statuses[str(response.status_code)] = statuses.get(str(response.status_code), 0) + 1
    if response.status_code != 200:
        raise RuntimeError(f"{what}: {response.status_code} {response.text[:200]}")
    return response.json() if response.content else None


def _order(session, *, base: str, token: str, transaction_id: str, clock: _Clock, timeout, statuses: dict) -> None:
    """Steps 1-5 of one order: GET, fulfill (PDF), slots, PUT, PATCH."""
    from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller

    bearer = {"Authorization": f"Bearer {token}"}
    url = f"{base}/partner/v2/transactions/{transaction_id}"
    with clock.part("http"):
        txn = _answer(session.get(url, headers=bearer, timeout=timeout, allow_redirects=False), "GET", statuses)
    with clock.part("fulfill"):
        fulfillment = AddressVerificationFulfiller().fulfill(
            transaction_id=transaction_id, request=txn.get("request") or {}, product={}
        )
    items = [{"name": a.name, "mimeType": a.mime_type} for a in fulfillment.attachments]

    def sent(payload) -> dict:  # a JSON body as the client sends it
        headers = {**bearer, "Content-Type": JSON_TYPE}
        return {"data": _compact(payload), "headers": headers, "timeout": timeout, "allow_redirects": False}

    with clock.part("http"):
        slots = _answer(session.post(f"{url}/response/resources", **sent(items)), "POST slots", statuses)
        for slot, attachment in zip(slots, fulfillment.attachments, strict=True):
            _answer(
                session.put(
                    slot["location"],
                    data=attachment.content,
                    headers={"Authorization": slot["authorization"], "Content-Type": slot["mimeType"]},
                    timeout=timeout,
                    allow_redirects=False,
                ),
                "PUT",
                statuses,
            )
    payload = dict(fulfillment.response)
    payload["resources"] = [{"id": s["id"], "name": s["name"], "mimeType": s["mimeType"]} for s in slots]
    with clock.part("http"):
        _answer(session.patch(f"{url}/response", **sent(payload)), "PATCH", statuses)


def _event_get(session, *, base: str, token: str, transaction_id: str, event_id: str, timeout, statuses) -> str:
    url = f"{base}/partner/v2/transactions/{transaction_id}/events/{event_id}"
    event = _answer(
        session.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout, allow_redirects=False),
        "GET event",
        statuses,
    )
    return event.get("type", "")


def _bare_process(conn, job: dict) -> None:
    """One bare process: its orders' steps 1-5, then (event ids received) step 6; CPU by part.

    Long because it is one process's whole run and its protocol with the parent: warm-up,
    counted orders, the pause while the parent waits for the callbacks, the events, the figures.
    """
    from django.conf import settings

    import partner.fulfillment.automated.fulfillers.address_verification as av

    clock = _Clock()
    pdf_build = av.address_report_pdf

    def timed_pdf(report):  # the report alone, inside fulfill()
        with clock.part("pdf"):
            return pdf_build(report)

    av.address_report_pdf = timed_pdf
    base, token, timeout = job["base"], job["token"], settings.SVC_TIMEOUT
    session = _bare_session()
    statuses_warm, statuses = {}, {}
    errors = []
    warmup_started = time.process_time()
    for txn in job["warmup"]:
        _order(session, base=base, token=token, transaction_id=txn, clock=_Clock(), timeout=timeout, statuses={})
    warmup_cpu = time.process_time() - warmup_started
    clock.parts.clear()
    orders_started = time.process_time()
    wall = time.monotonic()
    for txn in job["orders"]:
        try:
            _order(session, base=base, token=token, transaction_id=txn, clock=clock, timeout=timeout, statuses=statuses)
        except Exception as exc:  # reported, never hidden
            errors.append(f"{txn}: {type(exc).__name__}: {exc}"[:300])
    orders_cpu = time.process_time() - orders_started
    orders_wall = time.monotonic() - wall
    conn.send({"phase": "orders_done"})
    events = conn.recv()  # {transaction_id: event_id}, warm-up included
    warmup_started = time.process_time()
    for txn in job["warmup"]:
        if txn in events:
            _event_get(
                session,
                base=base,
                token=token,
                transaction_id=txn,
                event_id=events[txn],
                timeout=timeout,
                statuses=statuses_warm,
            )
    warmup_cpu += time.process_time() - warmup_started
    events_started = time.process_time()
    types = {}
    for txn in job["orders"]:
        if txn not in events:
            errors.append(f"{txn}: no processed callback stored")
            continue
        with clock.part("http"):
            kind = _event_get(
                session,
                base=base,
                token=token,
                transaction_id=txn,
                event_id=events[txn],
                timeout=timeout,
                statuses=statuses,
            )
        types[kind] = types.get(kind, 0) + 1
    events_cpu = time.process_time() - events_started
    conn.send(
        {
            "phase": "done",
            "orders": len(job["orders"]),
            "cpu_s": orders_cpu + events_cpu,
            "warmup_cpu_s": warmup_cpu,
            "orders_wall_s": orders_wall,
            "parts_s": clock.parts,
            "statuses": statuses,
            "event_types": types,
            "errors": errors[:20],
            "error_count": len(errors),
        }
    )
    conn.close()


def token_fetch(env: dict) -> str:
    """One access token for the run: client credentials in HTTP Basic, as partner/platform/tokens.py."""
    import requests

    response = requests.post(
        env["SVC_TOKEN_URL"],
        data={"grant_type": "client_credentials"},
        auth=(_client_id(), env["SVC_CLIENT_SECRET"]),
        timeout=10,
    )
    response.raise_for_status()
    return response.json()["access_token"]


def _client_id() -> str:
    from django.conf import settings

    return settings.SVC_CLIENT_ID


def _summed(dicts) -> dict:
    total = {}
    for each in dicts:
        for key, value in each.items():
            total[key] = total.get(key, 0) + value
    return total


def _callbacks_wait(database: str, ids: list[str], *, timeout: float = 120) -> dict[str, str]:
    """{transaction id: event id} of the processed notifications our intake stored for `ids`."""
    import psycopg

    from partner.platform.client import resource_ref_parse
    from partner.platform.errors import ResourceOutsideServiceError
    from partner.platform.urns import event_resource_type

    wanted, found = set(ids), {}
    deadline = time.monotonic() + timeout
    with psycopg.connect(database, autocommit=True) as conn:
        while time.monotonic() < deadline:
            rows = conn.execute(
                "SELECT resource_ref FROM inbox_notification WHERE resource_type = %s", [event_resource_type()]
            ).fetchall()
            for (ref,) in rows:
                try:
                    parsed = resource_ref_parse(ref)
                except ResourceOutsideServiceError:  # an earlier stack's, on another port (bench/run.py)
                    continue
                if parsed.transaction_id in wanted:
                    found[parsed.transaction_id] = parsed.event_id
            if len(found) >= len(wanted):
                break
            time.sleep(0.2)
    return found


def _notifications_forget(database: str) -> int:
    """Drop the callbacks the bare order's orders left in the inbox: no later worker's relay may process them."""
    import psycopg

    from partner.platform.urns import event_resource_type

    with psycopg.connect(database, autocommit=True) as conn:
        return conn.execute(
            "DELETE FROM inbox_notification WHERE resource_type = %s AND state = 'received'", [event_resource_type()]
        ).rowcount


def bare_run(*, seed, web: stack.Process, env: dict, access_log: Path, transactions: int, processes: int = 2) -> dict:
    """The bare order's orders against a running gunicorn + sandbox; its figures.

    Long because it is one measurement: orders created, token, the bare processes and their
    two phases, the access log's count of calls, and the figures taken between the same points.
    """
    from bench.end_to_end import access_log_calls
    from partner.sandbox.transactions import transaction_create

    warmups = processes * WARMUP_PER_PROCESS
    ids = [
        transaction_create(
            product=seed.products["address-verification"],
            user=seed.users["lender.demo"],
            loan=seed.loans[2],
            send_webhook=False,
        ).id
        for _ in range(transactions + warmups)
    ]
    warm, counted = ids[:warmups], ids[warmups:]
    offset = access_log.stat().st_size
    token = token_fetch(env)
    context = multiprocessing.get_context("spawn")
    pipes, children = [], []
    started = time.monotonic()
    for number in range(processes):
        parent_end, child_end = context.Pipe()
        job = {
            "base": env["SVC_BASE_URL"],
            "token": token,
            "warmup": warm[number * WARMUP_PER_PROCESS : (number + 1) * WARMUP_PER_PROCESS],
            "orders": counted[number::processes],
        }
        child = context.Process(target=_bare_process, args=(child_end, job), name=f"order-cpu-{number}")
        child.start()
        pipes.append(parent_end)
        children.append(child)
    for pipe in pipes:
        if pipe.recv().get("phase") != "orders_done":
            raise RuntimeError("a bare process did not finish its orders")
    orders_done = time.monotonic()
    events = _callbacks_wait(env["DATABASE_URL"], ids)
    waited = time.monotonic() - orders_done
    for pipe in pipes:
        pipe.send(events)
    results = [pipe.recv() for pipe in pipes]
    for child in children:
        child.join(timeout=30)
    kinds, codes = access_log_calls(access_log, offset)
    _notifications_forget(env["DATABASE_URL"])
    orders = sum(result["orders"] for result in results)
    cpu = sum(result["cpu_s"] for result in results)
    warmup_cpu = sum(result["warmup_cpu_s"] for result in results)
    parts = _summed(result["parts_s"] for result in results)
    per_order = {
        "pdf_report": parts.get("pdf", 0.0),
        "checks_and_response": parts.get("fulfill", 0.0) - parts.get("pdf", 0.0),
        "http_five_calls": parts.get("http", 0.0),
    }
    per_order["loop_and_rest"] = cpu - sum(per_order.values())
    statuses = _summed(result["statuses"] for result in results)
    tokens = kinds.pop("token", 0)
    calls = sum(count for kind, count in kinds.items() if kind not in ("host", "other"))
    return {
        "processes": processes,
        "orders": orders,
        "warmup_orders": warmups,
        "errors": sum(result["error_count"] for result in results),
        "error_examples": [line for result in results for line in result["errors"]][:5],
        "event_types": _summed(result["event_types"] for result in results),
        "cpu_ms_per_order": round(cpu * 1000 / max(1, orders), 2),
        # A fresh process's first order pays what later ones do not (the ZIP code data loaded, fonts,
        # the first connection): the worker of end_to_end.py pays it inside its N orders. Counted in:
        "warmup_cpu_ms_per_process": round(warmup_cpu * 1000 / processes, 1),
        "cpu_ms_per_order_with_warmup": round((cpu + warmup_cpu) * 1000 / max(1, orders + warmups), 2),
        "cpu_ms_per_order_by_part": {name: round(s * 1000 / max(1, orders), 2) for name, s in per_order.items()},
        "orders_phase_wall_s": round(orders_done - started, 2),
        "callbacks_wait_s": round(waited, 2),
        "call_statuses_seen_by_bare": statuses,
        "service_calls_by_kind": dict(kinds),
        "service_call_statuses": dict(codes),
        # Warm-up orders included in the access log's count: (counted + warm-up) orders made them.
        "service_calls_per_order": round(calls / max(1, orders + warmups), 2),
        "token_requests": tokens,
    }


def order_cpu_bench(
    *, database: str, transactions: int = 200, processes: int = 2, compare_worker: bool = False, lifetime: int = 3600
) -> dict:
    """The bare order's CPU per order (and, with `compare_worker`, our Celery worker's in the same server).

    Returns {"bare": bare_run's figures, "worker": end_to_end.run_once's (compare_worker only),
    "worker_cpu_ms_per_transaction", "worker_over_bare", "worker_over_bare_with_warmup"}.
    """
    from bench.end_to_end import run_once, sandbox_stack

    result = {"server": "gunicorn config.wsgi (sandbox mounted), 4 workers"}
    with sandbox_stack(database=database, lifetime=lifetime, name="order-cpu") as (seed, web, env, access_log):
        if compare_worker:
            result["worker"] = run_once(
                seed=seed,
                web=web,
                access_log=access_log,
                env=env,
                concurrency=processes,
                transactions=transactions,
                lifetime=lifetime,
            )
        result["bare"] = bare_run(
            seed=seed, web=web, env=env, access_log=access_log, transactions=transactions, processes=processes
        )
    if compare_worker:
        worker_ms = result["worker"]["cpu_ms_per_transaction"]["celery_worker"]
        result["worker_cpu_ms_per_transaction"] = worker_ms
        result["worker_over_bare"] = round(worker_ms / result["bare"]["cpu_ms_per_order"], 2)
        result["worker_over_bare_with_warmup"] = round(worker_ms / result["bare"]["cpu_ms_per_order_with_warmup"], 2)
    return result
