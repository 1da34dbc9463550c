"""Settings of local runs: `manage.py` and `make run` (the Procfile's web, worker and beat).

Base settings with DEBUG, the sandbox installed and mounted at /sandbox/, and the public values of
local runs and of the sandbox for what the environment leaves out (partner/core/demo_values.py):
nothing here is a secret, and production refuses every one of them. No server is needed: SQLite,
the SQLite broker and a file cache (base's defaults).
"""

from partner.core import demo_values

from .base import *  # noqa: F403
from .base import INSTALLED_APPS, env

# GENERAL
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#debug
DEBUG = env.bool("DJANGO_DEBUG", default=True)
# https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key
SECRET_KEY = SECRET_KEY or demo_values.LOCAL_SECRET_KEY  # noqa: F405
# https://docs.djangoproject.com/en/5.2/ref/settings/#allowed-hosts
ALLOWED_HOSTS = ALLOWED_HOSTS or ["127.0.0.1", "localhost", "[::1]"]  # noqa: F405

# partner.core
# ------------------------------------------------------------------------------
FIELD_ENCRYPTION_KEYS = FIELD_ENCRYPTION_KEYS or [demo_values.LOCAL_FIELD_ENCRYPTION_KEY]  # noqa: F405
# /metrics open to anyone on this machine (with DEBUG: a developer's run).
METRICS_PUBLIC = DEBUG

# partner.platform
# ------------------------------------------------------------------------------
# The sandbox's demo client and signing secret, which its seed data knows (`make demo`).
SVC_CLIENT_SECRET = SVC_CLIENT_SECRET or demo_values.SANDBOX_CLIENT_SECRET  # noqa: F405
SVC_SIGNING_SECRETS = SVC_SIGNING_SECRETS or [demo_values.SANDBOX_SIGNING_SECRET]  # noqa: F405
# The embedded sandbox's upload slots are on http://127.0.0.1: any scheme, any address.
SVC_UPLOAD_LOCATION_STRICT = not DEBUG

# partner.sandbox
# ------------------------------------------------------------------------------
# Installed and mounted at /sandbox/ unless SANDBOX_ENABLED=false.
SANDBOX_ENABLED = env.bool("SANDBOX_ENABLED", default=True)
if SANDBOX_ENABLED:
    INSTALLED_APPS = [*INSTALLED_APPS, "partner.sandbox"]
