"""The `waits` entry's pure parts (bench/benchmarks/waits.py, orders.py) and its judge (bench/harness/verdicts.py):
figures by hand, no servers."""

import copy
import json

from bench.benchmarks.orders import per, spread
from bench.benchmarks.waits import answer_waits
from bench.harness.verdicts import TARGETS, verdicts


def test_answer_waits_match_each_answer_to_the_first_patch_carrying_its_text():
    patches = {
        "t1": [(100.0, {"status": "inProgress"}), (101.5, {"partnerStatus": "bench update 7"})],
        "t2": [(103.0, {"partnerStatus": "bench final 7"}), (109.0, {"partnerStatus": "bench final 7"})],
    }
    answers = [
        {"kind": "status_update", "text": "bench update 7", "at": 101.0},
        {"kind": "final", "text": "bench final 7", "at": 101.0},
        {"kind": "final", "text": "bench final 8", "at": 101.0},  # no PATCH carries it: not counted
    ]
    assert answer_waits(answers, patches) == {"status_update": [0.5], "final": [2.0]}


def test_spread_is_p50_p99_and_the_most_in_milliseconds():
    assert spread([0.1 * n for n in range(1, 101)]) == {"n": 100, "p50_ms": 5100.0, "p99_ms": 9900.0, "max_ms": 10000.0}
    assert spread([]) == {"n": 0, "p50_ms": None, "p99_ms": None, "max_ms": None}


def test_per_is_milliseconds_per_item_without_postgresql():
    before = {"worker": 1.0, "our_web": 2.0, "postgresql": 9.0}
    after = {"worker": 3.0, "our_web": 2.5, "postgresql": 1.0}
    assert per(after, before, 10) == {"worker": 200.0, "our_web": 50.0}


def figures() -> dict:
    """Two runs whose every figure meets its target."""
    ms = {"n": 2, "p50_ms": 100.0, "p99_ms": 200.0, "max_ms": 200.0}
    connected = {
        "orders": 2,
        "answers_refused": [],
        "answer_to_patch": {"status_update": ms, "final": {**ms, "p99_ms": 2000.0}},
        "calls_wait_s": {"status_update": 0.3, "final": 1.1},
        "move_to_event_all": ms,
    }
    staff = {
        "deliveries": 2,
        "all_sent": True,
        "burst_s": 1.2,
        "latency_explains_s": 1.1,
        "over_latency": 1.09,
        "cpu_ms_per_delivery": {"worker": 20.0, "our_web": 30.0, "platform_web_and_emulators": 99.0},
    }
    slow = {"connected": connected, "staff": staff}
    fast = {"connected": {**connected, "calls_wait_s": {"status_update": 0, "final": 0}}, "staff": staff}
    fast["connected"]["answer_to_patch"] = {"status_update": ms, "final": ms}
    return json.loads(json.dumps({"runs": {"fast": fast, "slow": slow}}))  # no dict shared between the runs


def test_the_judge_meets_figures_within_the_targets():
    found = verdicts({"waits": figures()})
    assert all(line["met"] for line in found.values())
    # Each answer against its own calls' waits + 1 s; the staff's burst and CPU judged at the slow platform only.
    assert found["waits_answer_final_slow"]["target"] == "≤ 2100"
    assert found["waits_answer_final_fast"]["target"] == "≤ 1000"
    assert "waits_staff_burst_over_latency" in found and "waits_staff_cpu_ms_per_delivery" in found
    assert found["waits_staff_cpu_ms_per_delivery"]["measured"] == 50.0  # ours: web + worker, not the platform's


def test_the_judge_misses_each_figure_past_its_target():
    data = copy.deepcopy(figures())
    slow = data["runs"]["slow"]
    slow["connected"]["answer_to_patch"]["final"]["p99_ms"] = 2101.0
    slow["connected"]["move_to_event_all"]["p99_ms"] = 1001.0
    slow["staff"]["over_latency"] = 1.6
    slow["staff"]["cpu_ms_per_delivery"]["worker"] = TARGETS["waits_staff_cpu_ms_per_delivery"]
    found = verdicts({"waits": data})
    missed = {key for key, line in found.items() if not line["met"]}
    assert missed == {
        "waits_answer_final_slow",
        "waits_move_to_event_slow",
        "waits_staff_burst_over_latency",
        "waits_staff_cpu_ms_per_delivery",
    }


def test_an_answer_refused_or_missing_is_missed_whatever_the_others_waited():
    data = copy.deepcopy(figures())
    data["runs"]["fast"]["connected"]["answers_refused"] = ["RuntimeError('/deliveries answered 400')"]
    data["runs"]["slow"]["connected"]["answer_to_patch"]["status_update"]["n"] = 1
    found = verdicts({"waits": data})
    assert not found["waits_answer_final_fast"]["met"] and found["waits_answer_final_fast"]["measured"] is None
    assert not found["waits_answer_status_update_slow"]["met"]
