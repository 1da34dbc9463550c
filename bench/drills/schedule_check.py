"""The schedule drill's checker: a history (bench/drills/schedule.py writes it) held against the invariants.

Pure: no Django, no database. `check(history)` returns the violations, each a sentence naming the
invariant and the order or event it caught; an empty list is a clean run. The history holds what
the drill did and saw (orders, answers, pushes, pulls, faults, the platform's calls) and the final
rows it read at the end (`final`: our orders and deliveries, the platform's accepted PATCHes, the
connection's events).
"""

import json
from collections import Counter, defaultdict

FINISHED = ("REQUEST_COMPLETED", "FAILED", "DECLINED")
# Failure codes that carry a reason the platform or the lender gave; any other is an outage of ours.
GIVEN_BY_THEM = ("credentials_invalid", "order_refused", "service_rejected", "product_unknown")
COMPLETED = "completed"  # a PATCH's status that completes the response
WORKER_HOSTS = ("wk1", "wk2")
# Faults that may move an order from one worker host to the other without anything being wrong.
MOVING = ("cut", "kill", "worker_cut", "broker_restart", "postgres_restart")
RECENT = 30  # calls of the access log before a cut that name the orders the cut-off host was working


def check(history: dict) -> list[str]:
    found: list[str] = []
    for invariant in (
        orders_finished,
        one_completing_patch,
        answers_reached_in_order,
        deliveries_confirmed_once,
        events_pushed_in_order,
        pulled_is_pushed,
        no_send_after_lease_lost,
        others_orders_stay_theirs,
    ):
        found += [f"{invariant.__name__}: {problem}" for problem in invariant(history)]
    return found


def orders_finished(history: dict) -> list[str]:
    """Every order finished, or failed for a reason the platform or the lender gave."""
    found = []
    rows = history["final"]["orders"]
    for order in history["orders"]:
        row = rows.get(order["txn"])
        if row is None:
            found.append(f"{order['txn']} ({order['kind']}): no order row")
        elif row["status"] not in FINISHED:
            found.append(f"{order['txn']} ({order['kind']}): left {row['status']}")
        elif row["status"] == "FAILED" and row.get("failure_code") not in GIVEN_BY_THEM:
            found.append(f"{order['txn']} ({order['kind']}): failed for an outage of ours ({row.get('failure_code')})")
    return found


def one_completing_patch(history: dict) -> list[str]:
    """A completed order has exactly one completing PATCH, the last one it got; no other order has one."""
    found = []
    for order in history["orders"]:
        txn = order["txn"]
        patches = history["final"]["patches"].get(txn, [])
        completing = [index for index, payload in enumerate(patches) if payload.get("status") == COMPLETED]
        status = history["final"]["orders"].get(txn, {}).get("status")
        if status == "REQUEST_COMPLETED" and len(completing) != 1:
            found.append(f"{txn}: {len(completing)} completing PATCHes")
        elif status != "REQUEST_COMPLETED" and completing:
            found.append(f"{txn}: completing PATCH but the order is {status}")
        if completing and completing[0] != len(patches) - 1:
            found.append(f"{txn}: {len(patches) - 1 - completing[0]} PATCH(es) after the completing one")
    return found


def answers_reached_in_order(history: dict) -> list[str]:
    """Every accepted API or staff answer is in one PATCH the platform accepted, in the order accepted."""
    found = []
    accepted = defaultdict(list)
    for answer in history["answers"]:
        if answer["accepted"] and answer["text"]:  # the acknowledgement carries no text of its own
            accepted[answer["txn"]].append(answer["text"])
    for txn, texts in accepted.items():
        patches = [json.dumps(payload) for payload in history["final"]["patches"].get(txn, [])]
        places = []
        for text in texts:
            holding = [index for index, patch in enumerate(patches) if text in patch]
            if len(holding) != 1:
                found.append(f"{txn}: answer {text!r} in {len(holding)} PATCHes")
            places += holding[:1]
        if places != sorted(places) or len(set(places)) != len(places):
            found.append(f"{txn}: answers reached the platform as PATCHes {places}, not in the order accepted")
    return found


def deliveries_confirmed_once(history: dict) -> list[str]:
    """Every delivery the platform accepted was confirmed, one confirmation each, and a connected
    order's system was told once per confirmation."""
    found = []
    confirmed_events = Counter(
        (event["order"], event["version"])
        for event in history["final"]["events"]
        if event["type"] == "order.delivery.confirmed"
    )
    per_order = Counter(order for order, _ in confirmed_events)
    for order in history["orders"]:
        txn, row = order["txn"], history["final"]["orders"].get(order["txn"])
        if row is None:
            continue
        states = Counter(delivery["state"] for delivery in row["deliveries"])
        patches = len(history["final"]["patches"].get(txn, []))
        if states["sent"] or states["pending"]:
            found.append(f"{txn}: deliveries unconfirmed {dict(states)}")
        if states["confirmed"] != patches:
            found.append(f"{txn}: {states['confirmed']} deliveries confirmed for {patches} accepted PATCHes")
        numbered = sorted(d["sequence"] for d in row["deliveries"] if d.get("sequence") is not None)
        if any("sequence" in d for d in row["deliveries"]) and numbered != list(range(1, patches + 1)):
            found.append(f"{txn}: deliveries numbered {numbered} for {patches} accepted PATCHes")
        if order["kind"] == "connected" and per_order[row["pk"]] != states["confirmed"]:
            found.append(f"{txn}: {per_order[row['pk']]} confirmation events for {states['confirmed']} confirmed")
    return found


def events_pushed_in_order(history: dict) -> list[str]:
    """Every event pushed and accepted, one webhook-id each; each order's in version order, no gaps."""
    found = []
    events = {event["webhook_id"]: event for event in history["final"]["events"]}
    taken = [push for push in history["pushes"] if push["answered"] < 300]
    seen = Counter(push["webhook_id"] for push in taken)
    for webhook_id in events.keys() - seen.keys():
        found.append(f"event {events[webhook_id]['type']} {webhook_id} never accepted by the receiver")
    for webhook_id in seen.keys() - events.keys():
        found.append(f"push {webhook_id} is no event of the connection")
    same = Counter((event["order"], event["version"], event["type"]) for event in events.values())
    found += [f"event {key} made under {count} webhook-ids" for key, count in same.items() if count > 1]
    arrived = defaultdict(list)
    for push in taken:
        if push["webhook_id"] not in arrived[push["order"]]:
            arrived[push["order"]].append(push["webhook_id"])
    for order, ids in arrived.items():
        versions = [events[webhook_id]["version"] for webhook_id in ids if webhook_id in events]
        if versions != sorted(versions):
            found.append(f"order {order}: pushed in versions {versions}")
        if versions and sorted(versions) != list(range(1, len(versions) + 1)):
            found.append(f"order {order}: versions {sorted(versions)} have gaps")
    return found


def pulled_is_pushed(history: dict) -> list[str]:
    """The pull reader saw every event of the connection once, the pushed set, in increasing positions."""
    found = []
    pulled = [event["webhook_id"] for event in history["pulled"]]
    positions = [event["position"] for event in history["pulled"]]
    pushed = {event["webhook_id"] for event in history["final"]["events"]}
    twice = [webhook_id for webhook_id, count in Counter(pulled).items() if count > 1]
    if twice:
        found.append(f"{len(twice)} events pulled more than once")
    if set(pulled) != pushed:
        found.append(f"pulled {len(set(pulled) - pushed)} not pushed, missed {len(pushed - set(pulled))}")
    if positions != sorted(positions):
        found.append("positions pulled out of order")
    return found


def no_send_after_lease_lost(history: dict) -> list[str]:
    """A worker host cut off mid-order sends nothing, once back, for an order another host sent for
    while it was away: its orders are those it called about just before the cut (the last RECENT
    calls of the log), the window ends a lease after its return (`line_settled`), when what it had
    in flight has ended; an order it takes up later is a new run of its own. (Our records account
    for every PATCH besides: `deliveries_confirmed_once`.)"""
    found = []
    calls, known = history["calls"], {order["txn"] for order in history["orders"]}
    workers = {history["hosts"][host] for host in WORKER_HOSTS}

    def order_of(path: str) -> str | None:
        return next((part for part in path.split("/") if part in known), None)

    def sent(call) -> bool:
        return call[1] != "GET" and call[3].startswith("2") and order_of(call[2]) is not None

    for fault in history["faults"]:
        if (
            fault["kind"] not in ("cut", "worker_cut")
            or fault.get("host") not in WORKER_HOSTS
            or "line_from" not in fault
        ):
            continue
        address, began, back = history["hosts"][fault["host"]], fault["line_from"], fault["line_to"]
        held = {order_of(call[2]) for call in calls[max(0, began - RECENT) : began] if call[0] == address}
        taken = {order_of(c[2]) for c in calls[began:back] if c[0] in workers - {address} and sent(c)}
        for index in range(back, min(fault["line_settled"], len(calls))):
            call = calls[index]
            if call[0] == address and sent(call) and order_of(call[2]) in held & taken:
                found.append(f"{fault['host']} sent {call[1]} for {order_of(call[2])} after losing it (call {index})")
    return found


def others_orders_stay_theirs(history: dict) -> list[str]:
    """While a worker host is cut off mid-upload (`worker_cut`, every upload held longer than a lease),
    the other host keeps its orders by renewing their leases: each order whose slots it asked for
    meanwhile, it PATCHed last. Not judged while another fault that may move orders overlapped."""
    found, calls = [], history["calls"]
    for fault in history["faults"]:
        if fault["kind"] != "worker_cut" or "line_from" not in fault:
            continue
        if any(
            other is not fault and other["kind"] in MOVING and other["began"] < fault["ended"]
            for other in history["faults"]
            if fault["began"] < other["ended"]
        ):
            continue
        other = history["hosts"][next(host for host in WORKER_HOSTS if host != fault["host"])]
        asked = {
            call[2].split("/transactions/")[1].split("/")[0]
            for call in calls[fault["line_from"] : fault["line_to"]]
            if call[0] == other and call[2].endswith("/response/resources")
        }
        for txn in sorted(asked):
            patched = [c[0] for c in calls if c[1] == "PATCH" and c[2].endswith(f"/{txn}/response") and c[3][0] == "2"]
            if patched and patched[-1] != other:
                found.append(
                    f"{txn}: the other host asked for its slots while {fault['host']} was cut, another PATCHed it"
                )
    return found
