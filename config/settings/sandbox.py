"""partner.sandbox: the service emulator (installed only where SANDBOX_ENABLED)."""

from .environment import env

# partner.sandbox: the service emulator (installed only where SANDBOX_ENABLED)
# ------------------------------------------------------------------------------
# partner/sandbox/__init__.py
# Its host API hands out partner access tokens to anyone: never in production's INSTALLED_APPS unless
# the process environment asks (`check --deploy` then fails, partner.E002). Each settings module
# says (local, production, test); the values below are used only where it is installed.
SANDBOX_ENABLED = False
# The sandbox's address in resourceRef and upload locations when no request gives it (empty:
# PUBLIC_BASE_URL/sandbox).
SANDBOX_BASE_URL = env.str("SANDBOX_BASE_URL", default="")
SANDBOX_TOKEN_LIFETIME = env.int("SANDBOX_TOKEN_LIFETIME", default=3600)  # access tokens' seconds
# Its webhook sender: threads, attempts per webhook, backoff (seconds, doubled per attempt, up to the
# maximum) and (connect, read) timeouts.
SANDBOX_WEBHOOK_WORKERS = env.int("SANDBOX_WEBHOOK_WORKERS", default=8)
SANDBOX_WEBHOOK_MAX_ATTEMPTS = env.int("SANDBOX_WEBHOOK_MAX_ATTEMPTS", default=6)
SANDBOX_WEBHOOK_BACKOFF = env.float("SANDBOX_WEBHOOK_BACKOFF", default=1.0)
SANDBOX_WEBHOOK_BACKOFF_MAX = env.float("SANDBOX_WEBHOOK_BACKOFF_MAX", default=60.0)
SANDBOX_WEBHOOK_TIMEOUT = (
    env.float("SANDBOX_WEBHOOK_CONNECT_TIMEOUT", default=5.0),
    env.float("SANDBOX_WEBHOOK_READ_TIMEOUT", default=15.0),
)
# The largest upload (bytes) and the most slots one request may ask for.
SANDBOX_UPLOAD_MAX_BYTES = env.int("SANDBOX_UPLOAD_MAX_BYTES", default=25 * 1024 * 1024)
SANDBOX_MAX_SLOTS_PER_REQUEST = env.int("SANDBOX_MAX_SLOTS_PER_REQUEST", default=50)
# Faults injected into its answers, besides the rows staff add in its admin (partner/sandbox/faults.py):
# a JSON list of FaultRule fields, e.g. [{"endpoint": "products", "status": 503}].
SANDBOX_FAULTS = env.json("SANDBOX_FAULTS", default=[])
