"""Settings of the benchmark processes: the production settings plus the sandbox knobs a run sets.

`config.settings.base` reads everything from the environment except a few
sandbox settings; the end-to-end benchmark and the token drill need the
access token lifetime of the sandbox from the environment too.
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

SANDBOX_TOKEN_LIFETIME = env.int("SANDBOX_TOKEN_LIFETIME", default=3600)
SANDBOX_WEBHOOK_WORKERS = env.int("SANDBOX_WEBHOOK_WORKERS", default=8)

# What-if runs only (`bench/run.py --what-if-cheap-credentials`): a cheap password hasher for
# the partner account, to estimate the pipeline once the credential check stops paying a
# full PBKDF2 hash per transaction (see bench/README.md). Never the default.
if env.bool("BENCH_CHEAP_PASSWORD_HASH", default=False):
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
