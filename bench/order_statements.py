"""SQL statements and Celery tasks per automated order: the counts tests/fulfillment/test_order_budget.py holds.

The test runs two orders step by step in one process, as production runs them (the intake, the
relay, the `created` notification's task with the order's work, the callback's), against a fake
of the service, and counts each step's statements (Django's `CaptureQueriesContext`) and the
tasks published; it fails when a step grows. This runs that test on its own (SQLite, the test
settings, nothing shared with the other benchmarks) and reads the line it prints with its counts,
so `make bench` reports them beside the other figures.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/fulfillment/test_order_budget.py"
MARK = "ORDER-BUDGET "
# What a bench stack puts in this process's environment, which the test's own settings must not see.
STACK_KEYS = ("DJANGO_", "DATABASE_URL", "CACHE_URL", "CELERY_", "SVC_", "PUBLIC_BASE_URL", "SANDBOX_", "LOG_LEVEL")


def order_statements() -> dict:
    """{"statements": {step: count}, "total", "before", "tasks_per_order", "tasks"}, as the test counted them."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(STACK_KEYS)}
    argv = [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", TEST, "-k", "within_its_query_budget"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    for line in done.stdout.splitlines():
        if line.startswith(MARK):
            counted = json.loads(line.removeprefix(MARK))
            counted["test_passed"] = done.returncode == 0
            return counted
    output = done.stdout[-3000:] + done.stderr[-2000:]
    raise RuntimeError(f"{TEST} printed no counts (exit {done.returncode}):\n{output}")


if __name__ == "__main__":
    print(json.dumps(order_statements(), indent=2))
