"""Settings of the benchmark processes: the production settings plus a what-if switch.

`config.settings.base` reads from the environment everything a run sets, the
sandbox's access token lifetime and webhook sender threads included; this module
adds only what must never be the default.
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

# What-if runs only (`bench/run.py --what-if-cheap-credentials`): a cheap password hasher for
# the partner account, to estimate the pipeline once the credential check stops paying a
# full PBKDF2 hash per transaction (see bench/README.md). Never the default.
if env.bool("BENCH_CHEAP_PASSWORD_HASH", default=False):
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
