"""Settings of the benchmark processes: the production settings, read from the environment a run sets.

`bench/stack.py` (`app_env`) sets what each process needs (database, broker, cache, the sandbox's
knobs); the benchmarks that run orders against the sandbox on the loopback use
`bench.settings_loopback`.
"""

from config.settings.production import *  # noqa: F403
