"""Settings of a deployment: `gunicorn config.wsgi` and `celery -A config worker|beat`.

Base settings with what a deployment must give required (a secret key, the allowed hosts, the field
encryption keys, the service's client secret, a broker server), every public value of local runs
and of the sandbox refused (partner/core/demo_values.py), cookies Secure and HSTS on. Start-up stops
with a message that names the variable and never echoes its value. The sandbox is not installed
unless the process environment itself (never a `.env` file) sets SANDBOX_ENABLED, and then
`manage.py check --deploy` fails (partner.E002), as it does on the rest of what must not ship
(partner/core/checks.py).
"""

from django.core.exceptions import ImproperlyConfigured

from partner.core import brokers, demo_values

from .base import *  # noqa: F403
from .base import INSTALLED_APPS, env, env_read, process_env

# GENERAL
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key
if SECRET_KEY in ("", demo_values.LOCAL_SECRET_KEY):  # noqa: F405
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is required in production, and not the local runs' one "
        "(generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )
# https://docs.djangoproject.com/en/5.2/ref/settings/#allowed-hosts
if not ALLOWED_HOSTS:  # noqa: F405
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS is required in production")

# SECURITY
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/middleware/#http-strict-transport-security
SECURE_HSTS_SECONDS = env_read("DJANGO_SECURE_HSTS_SECONDS", env.int, default=31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
# https://docs.djangoproject.com/en/5.2/ref/settings/#secure-ssl-redirect
SECURE_SSL_REDIRECT = env_read("DJANGO_SECURE_SSL_REDIRECT", env.bool, default=True)
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

# partner.core
# ------------------------------------------------------------------------------
if not FIELD_ENCRYPTION_KEYS or demo_values.LOCAL_FIELD_ENCRYPTION_KEY in FIELD_ENCRYPTION_KEYS:  # noqa: F405
    raise ImproperlyConfigured(
        "FIELD_ENCRYPTION_KEYS is required in production, and must not hold the local runs' key "
        "(generate one with: "
        "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
    )

# partner.platform
# ------------------------------------------------------------------------------
# No signing secret by default: products may have their own only. (A demo SVC_CLIENT_ID alone grants
# nothing; `check --deploy` reports it, partner.E001.)
if not SVC_CLIENT_SECRET:  # noqa: F405
    raise ImproperlyConfigured("SVC_CLIENT_SECRET is required in production")
if SVC_CLIENT_SECRET == demo_values.SANDBOX_CLIENT_SECRET:  # noqa: F405
    raise ImproperlyConfigured("SVC_CLIENT_SECRET is the sandbox's public demo secret, refused in production")
if demo_values.SANDBOX_SIGNING_SECRET in SVC_SIGNING_SECRETS:  # noqa: F405
    raise ImproperlyConfigured(
        "SVC_SIGNING_SECRETS holds the sandbox's public demo secret, refused in production: "
        "anyone could sign a webhook for every product (leave it empty when each product has its own)"
    )

# partner.sandbox
# ------------------------------------------------------------------------------
# Only the process environment can install it here: a SANDBOX_ENABLED=true in a .env file is a local
# run's (`make setup` writes one) and is not obeyed.
SANDBOX_ENABLED = env_read("SANDBOX_ENABLED", process_env.bool, default=False)
if SANDBOX_ENABLED:
    INSTALLED_APPS = [*INSTALLED_APPS, "partner.sandbox"]

# CELERY
# ------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html#broker-url
# A broker server: one that needs none (filesystem, memory, SQLite, base's default) keeps its queue
# in one process or on one machine's disk (partner/core/brokers.py).
_BROKER_SERVERS = "redis://host:6379/0 or amqp://user:password@host//"
if "CELERY_BROKER_URL" not in env:
    raise ImproperlyConfigured(f"CELERY_BROKER_URL is required in production: {_BROKER_SERVERS}")
if brokers.broker_url_serverless(CELERY_BROKER_URL):  # noqa: F405
    raise ImproperlyConfigured(
        "CELERY_BROKER_URL names a broker that needs no server (filesystem, memory or SQLite), refused in "
        f"production: its queue is one machine's or one process's. Use {_BROKER_SERVERS}"
    )
