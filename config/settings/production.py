"""Settings of a deployment: `gunicorn config.wsgi` and `celery -A config worker|beat`.

Base settings with cookies Secure and HSTS on, the sandbox left out, and the preflight at start on.
These settings load whatever is missing or unsafe, so that `manage.py check --deploy` reports every
problem of a configuration at once, each as a system-check error with its hint
(partner/core/checks.py): a required value missing (a secret key, the allowed hosts, the field
encryption keys, the service's client secret, a broker server), a public value of local runs or of
the sandbox (partner/core/demo_values.py), a weak secret, plain http to the service, a value that
opens everything, the demo company, console e-mail, documents on one machine's disk. The servers
still refuse to start (PREFLIGHT_AT_START: `config/wsgi.py`, `config/asgi.py`, the Celery worker and
scheduler), with one message listing every error that makes the application unsafe or broken,
naming variables and never echoing a value. The sandbox is not installed unless the process
environment itself (never a `.env` file) sets SANDBOX_ENABLED, and then `check --deploy` fails
(partner.E002).
"""

from .base import *  # noqa: F403
from .base import INSTALLED_APPS, env, process_env

# GENERAL
# ------------------------------------------------------------------------------
# Servers refuse to start on an error of the preflight's `start` checks (partner/core/checks.py).
PREFLIGHT_AT_START = True

# SECURITY
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/middleware/#http-strict-transport-security
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
# https://docs.djangoproject.com/en/5.2/ref/settings/#secure-ssl-redirect
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz(/live|/ready)?$"]  # load balancers probe over plain HTTP
# https://docs.djangoproject.com/en/5.2/ref/settings/#secure-proxy-ssl-header
if TRUSTED_PROXIES:  # noqa: F405 - X-Forwarded-Proto believed from them only (partner/core/middleware.py)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# https://docs.djangoproject.com/en/5.2/ref/settings/#session-cookie-secure
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
# The embedded page's CSRF cookie must cross into the host's iframe (SameSite=None requires
# Secure); the session cookie is the admin's alone, which is never framed.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "None"

# partner.sandbox
# ------------------------------------------------------------------------------
# Only the process environment can install it here: a SANDBOX_ENABLED=true in a .env file is a local
# run's (`make setup` writes one) and is not obeyed.
SANDBOX_ENABLED = process_env.bool("SANDBOX_ENABLED", default=False)
if SANDBOX_ENABLED:
    INSTALLED_APPS = [*INSTALLED_APPS, "partner.sandbox"]

# CELERY
# ------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html#broker-url
# A broker server, required: base's default (SQLite) needs none and keeps its queue on one machine's
# disk (partner/core/brokers.py). Left empty here so that the preflight names it (partner.E008); one
# that needs no server is partner.E003.
if "CELERY_BROKER_URL" not in env:
    CELERY_BROKER_URL = ""
