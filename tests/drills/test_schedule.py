"""Fault drill: a short randomised fault schedule (bench/drills/schedule.py) passes its checker.

A new seed each run, printed (and named in the failure) so that a failing schedule is replayed with
`.venv/bin/python -m bench.drills.schedule --orders 9 --seed N`. The drill builds its own hosts
(network namespaces) and servers (PostgreSQL, Redis), never the machine's: it needs root.
"""

import json
import os
import random
import subprocess
import sys

import pytest

from bench.harness.hosts import missing
from bench.harness.stack import ENVIRON_AT_START, ROOT

pytestmark = pytest.mark.skipif(bool(missing()), reason=f"the schedule drill needs {', '.join(missing())}")


# The drill's own limit (420 s: its hosts set up, its orders, the checker) before the suite's 300 s
# for one test: on a loaded machine the suite's came first and named no seed.
@pytest.mark.timeout(480)
def test_a_short_random_schedule_keeps_every_invariant(tmp_path):
    # A fixed seed in CI, so that a run's verdict is the code's; SCHEDULE_SEED=random draws a new one
    # (seed 495502865 broke deliveries_confirmed_once: issue 32's note).
    chosen = os.environ.get("SCHEDULE_SEED", "101")
    seed = random.SystemRandom().randrange(10**9) if chosen == "random" else int(chosen)
    print(f"\nschedule drill seed {seed}")
    output = tmp_path / "report.json"
    argv = [
        sys.executable,
        "-m",
        "bench.drills.schedule",
        "--orders",
        "9",
        "--seed",
        str(seed),
        "--output",
        str(output),
    ]
    ran = subprocess.run(argv, cwd=ROOT, env=ENVIRON_AT_START, capture_output=True, text=True, timeout=420)
    assert output.exists(), f"seed {seed}: no report ({ran.returncode})\n{ran.stdout[-3000:]}\n{ran.stderr[-3000:]}"
    report = json.loads(output.read_text())
    print(json.dumps({key: report[key] for key in ("faults", "finished_s", "pushes", "pulled")}))
    assert report["ok"], f"seed {seed}: {json.dumps(report, indent=1)}"
