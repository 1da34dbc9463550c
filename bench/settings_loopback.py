"""Settings of the benchmark processes whose service is the sandbox on http://127.0.0.1.

`bench.settings` (production settings) plus one exception: with DJANGO_DEBUG off an upload
slot's location must be https on a public address (`SVC_UPLOAD_LOCATION_STRICT`,
partner/platform/locations.py), and the emulated service's slots are http on the loopback, so
every order would fail at its upload. Only the benchmarks that run orders against the sandbox
use this module (bench/end_to_end.py and those built on it).
"""

from bench.settings import *  # noqa: F403

SVC_UPLOAD_LOCATION_STRICT = False
