"""The schedule drill's checker (bench/drills/schedule_check.py): a clean history passes, and a history
that breaks each invariant is caught by that invariant. No database, no hosts: histories by hand."""

import copy

import pytest

from bench.drills.schedule import FAULTS, KINDS, draw
from bench.drills.schedule_check import check

HOSTS = {"wk1": "10.0.0.21", "wk2": "10.0.0.22"}


def clean() -> dict:
    """Three orders, one of each kind, each answered, confirmed and (the connected one) told and pulled."""
    pushes = [
        {"webhook_id": f"msg_{n}", "type": kind, "order": 3, "version": n, "answered": 200}
        for n, kind in enumerate(["order.created", "order.delivery.confirmed", "order.delivery.confirmed"], 1)
    ] + [{"webhook_id": "msg_4", "type": "order.completed", "order": 3, "version": 4, "answered": 200}]
    events = [{**push, "position": n} for n, push in enumerate(pushes, 1)]
    for event in events:
        del event["answered"]
    confirmed = [{"kind": "acknowledgement", "state": "confirmed"}, {"kind": "final", "state": "confirmed"}]
    return {
        "orders": [
            {"txn": "t-auto", "kind": "automated"},
            {"txn": "t-staff", "kind": "staff"},
            {"txn": "t-conn", "kind": "connected"},
        ],
        "answers": [
            {"txn": "t-staff", "text": "staff update a", "accepted": True},
            {"txn": "t-staff", "text": "staff final a", "accepted": True},
            {"txn": "t-conn", "text": "", "accepted": True},
            {"txn": "t-conn", "text": "final c", "accepted": True},
        ],
        "pushes": pushes,
        "pulled": [{"position": event["position"], "webhook_id": event["webhook_id"]} for event in events],
        "faults": [{"kind": "cut", "host": "wk1", "line_from": 0, "line_to": 0, "line_settled": 10}],
        "calls": [
            ("10.0.0.21", "GET", "/sandbox/transactions/t-auto", "200"),
            ("10.0.0.21", "PATCH", "/sandbox/transactions/t-auto/response", "200"),
            ("10.0.0.22", "PATCH", "/sandbox/transactions/t-staff/response", "200"),
        ],
        "hosts": HOSTS,
        "final": {
            "orders": {
                "t-auto": {
                    "pk": 1,
                    "status": "REQUEST_COMPLETED",
                    "deliveries": [{"kind": "result", "state": "confirmed"}],
                },
                "t-staff": {
                    "pk": 2,
                    "status": "REQUEST_COMPLETED",
                    "deliveries": [{"kind": "status_update", "state": "confirmed"}, *confirmed],
                },
                "t-conn": {"pk": 3, "status": "REQUEST_COMPLETED", "deliveries": confirmed},
            },
            "patches": {
                "t-auto": [{"status": "completed"}],
                "t-staff": [
                    {"partnerStatus": "Order received"},
                    {"status": "processing", "partnerStatus": "staff update a"},
                    {"status": "completed", "partnerStatus": "staff final a"},
                ],
                "t-conn": [{"partnerStatus": "Order received"}, {"status": "completed", "partnerStatus": "final c"}],
            },
            "events": events,
        },
    }


def test_a_clean_history_passes():
    assert check(clean()) == []


def broken(change) -> list[str]:
    history = copy.deepcopy(clean())
    change(history)
    return check(history)


def _failed_for_an_outage(h):
    h["final"]["orders"]["t-auto"] |= {"status": "FAILED", "failure_code": "retries_exhausted"}
    h["final"]["patches"]["t-auto"] = []
    h["final"]["orders"]["t-auto"]["deliveries"] = []


def _patch_after_completion(h):
    h["final"]["patches"]["t-auto"].append({"partnerStatus": "late"})
    h["final"]["orders"]["t-auto"]["deliveries"].append({"kind": "status_update", "state": "confirmed"})


def _answers_swapped(h):
    patches = h["final"]["patches"]["t-staff"]
    patches[1]["partnerStatus"], patches[2]["partnerStatus"] = "staff final a", "staff update a"


def _unconfirmed(h):
    h["final"]["orders"]["t-staff"]["deliveries"][0]["state"] = "sent"


def _gap(h):
    h["pushes"] = [push for push in h["pushes"] if push["version"] != 2]
    h["final"]["events"] = [event for event in h["final"]["events"] if event["version"] != 2]
    h["pulled"] = [event for event in h["pulled"] if event["webhook_id"] != "msg_2"]


def _pushed_out_of_order(h):
    h["pushes"][1], h["pushes"][2] = h["pushes"][2], h["pushes"][1]


def _one_event_two_ids(h):
    h["final"]["events"].append({**h["final"]["events"][0], "webhook_id": "msg_again", "position": 9})
    h["pushes"].append({**h["pushes"][0], "webhook_id": "msg_again"})
    h["pulled"].append({"position": 9, "webhook_id": "msg_again"})


def _pull_missed(h):
    del h["pulled"][1]


def _sent_after_lease_lost(h):
    """wk1 was working t-conn when it was cut off; wk2 sent for it meanwhile; wk1 sent on its return."""
    h["faults"] = [{"kind": "cut", "host": "wk1", "line_from": 4, "line_to": 5, "line_settled": 10}]
    h["calls"] += [
        ("10.0.0.21", "GET", "/sandbox/transactions/t-conn", "200"),
        ("10.0.0.22", "PATCH", "/sandbox/transactions/t-conn/response", "200"),
        ("10.0.0.21", "PATCH", "/sandbox/transactions/t-conn/response", "200"),
    ]


def _taken_from_the_other(h):
    """wk1 cut off mid-upload (worker_cut); wk2 asked for t-auto's slots meanwhile, yet wk1 PATCHed it."""
    h["faults"] = [
        {"kind": "worker_cut", "host": "wk1", "began": 1, "ended": 2, "line_from": 3, "line_to": 4, "line_settled": 4}
    ]
    h["calls"] += [("10.0.0.22", "POST", "/sandbox/transactions/t-auto/response/resources", "201")]
    h["calls"] += [("10.0.0.21", "PATCH", "/sandbox/transactions/t-auto/response", "200")]


def _numbered_twice(h):
    sequenced = [{**delivery, "sequence": 1} for delivery in h["final"]["orders"]["t-conn"]["deliveries"]]
    h["final"]["orders"]["t-conn"]["deliveries"] = sequenced


def test_an_order_taken_up_anew_after_a_cut_is_no_lease_lost_send():
    """wk1 back from its cut starts a new run of an order it was not working (wk2 sent its first PATCH)."""

    def new_run(h):
        h["faults"] = [{"kind": "cut", "host": "wk1", "line_from": 3, "line_to": 4, "line_settled": 10}]
        h["calls"] += [
            ("10.0.0.22", "PATCH", "/sandbox/transactions/t-conn/response", "200"),
            ("10.0.0.21", "PATCH", "/sandbox/transactions/t-conn/response", "200"),
        ]

    assert broken(new_run) == []


def _never_finished(h):
    h["final"]["orders"]["t-staff"]["status"] = "WITH_STAFF"


@pytest.mark.parametrize(
    "change, invariant",
    [
        (_never_finished, "orders_finished"),
        (_failed_for_an_outage, "orders_finished"),
        (_patch_after_completion, "one_completing_patch"),
        (_answers_swapped, "answers_reached_in_order"),
        (_unconfirmed, "deliveries_confirmed_once"),
        (_numbered_twice, "deliveries_confirmed_once"),
        (_gap, "events_pushed_in_order"),
        (_pushed_out_of_order, "events_pushed_in_order"),
        (_one_event_two_ids, "events_pushed_in_order"),
        (_pull_missed, "pulled_is_pushed"),
        (_sent_after_lease_lost, "no_send_after_lease_lost"),
        (_taken_from_the_other, "others_orders_stay_theirs"),
    ],
)
def test_a_history_breaking_an_invariant_is_caught(change, invariant):
    found = broken(change)
    assert any(problem.startswith(f"{invariant}:") for problem in found), found


def test_a_failure_the_platform_gave_is_a_finish():
    def refused(h):
        h["final"]["orders"]["t-auto"] |= {"status": "FAILED", "failure_code": "service_rejected"}
        h["final"]["patches"]["t-auto"] = []
        h["final"]["orders"]["t-auto"]["deliveries"] = []

    assert broken(refused) == []


def test_a_seed_draws_one_schedule_with_every_kind():
    first, again = draw(7, orders=12), draw(7, orders=12)
    assert first == again and first != draw(8, orders=12)
    assert {order["kind"] for order in first["orders"]} == set(KINDS)
    assert len(first["faults"]) >= 3 and {fault["kind"] for fault in first["faults"]} <= set(FAULTS)
    assert {fault["kind"] for fault in draw(7, orders=12, faults=("cut",))["faults"]} == {"cut"}


def test_each_draws_every_fault_once_in_its_order():
    plan = draw(7, orders=30, faults=("worker_cut", "web_stop", "broker_restart"), each=True)
    assert [fault["kind"] for fault in plan["faults"]] == ["worker_cut", "web_stop", "broker_restart"]
    assert [fault["at"] for fault in plan["faults"]] == [7.5, 15.0, 22.5]
