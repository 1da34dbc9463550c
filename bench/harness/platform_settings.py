"""Settings of the emulated platform's gunicorn in the order benchmarks (`Platform.web`,
bench/harness/platform.py): the bench's settings without our middleware and without the health-check
query Django runs on each request's first statement; the URL map stays ours (`config.wsgi` looks up
its webhook route at start), of which the platform is asked under /sandbox/ only.

The emulator shares the machine's cores with our stack, so its CPU is taken from ours in every
burst (docs/performance.md, "What the emulated platform costs"): our middleware (request ids,
sessions, CSRF, security headers, static files) and the health check were 14 % of each of its
requests, and none is the platform's. What it answers is the sandbox's views' own, unchanged; its
tests run it in our full stack.
"""

from bench.harness.settings import *  # noqa: F403
from bench.harness.settings import DATABASES

MIDDLEWARE = []
# Its database is never restarted during a benchmark; a broken connection fails one call at most.
DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
