"""Settings of the benchmark processes: the production settings plus the sandbox knobs a run sets.

`config.settings.base` reads everything from the environment except a few
sandbox settings; the end-to-end benchmark and the token drill need the
access token lifetime of the sandbox from the environment too.
"""

from config.settings.base import *  # noqa: F403
from config.settings.base import env

SANDBOX_TOKEN_LIFETIME = env.int("SANDBOX_TOKEN_LIFETIME", default=3600)
SANDBOX_WEBHOOK_WORKERS = env.int("SANDBOX_WEBHOOK_WORKERS", default=8)
