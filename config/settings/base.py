"""Settings shared by every kind of process, read from the environment.

Four modules, one per kind of process, picked by DJANGO_SETTINGS_MODULE:

- `base` (this one): every setting, declared once, grouped under Django, the libraries and each of
  our apps. Where local runs and production differ, it holds what is safe in production, or nothing
  where production must be told (a secret key, the allowed hosts, the keys and the client secret).
- `local`: `manage.py` and `make run`. DEBUG, the public values of local runs and of the sandbox,
  and the sandbox installed and mounted at /sandbox/.
- `production`: `gunicorn config.wsgi` and `celery -A config` in a deployment. What a deployment must
  give is required, public demo values are refused, cookies are Secure and HSTS is on; the sandbox
  is not installed unless the process environment asks for it.
- `test`: the suite (pyproject.toml names it): local's values, each run with its own database,
  queue, cache and folders.

Every variable is read through django-environ from the process environment, and from a `.env` file
at the repository root for what the process environment does not set (`make setup` copies
`.env.example`, which documents each variable). Reading them writes nothing: no file, no folder, no
`os.environ` (the broker's file and the metrics folder are made when a process starts: `config/celery.py`,
`partner/core/apps.py`). `manage.py check --deploy` checks the rest of a deployment
(partner/core/checks.py).
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from partner.core import (
    brokers,  # no Django import; kombu and SQLAlchemy only when a local broker is used
    demo_values,  # constants: the public values of local runs and of the sandbox
)
from partner.platform import urns  # the rule of a URN's words; no Django setting read on import

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"  # run-time files of local runs: broker, cache, media, metrics, beat schedule


# The variables whose value cannot be used, each with why (never the value). Reading goes on with
# the setting's default, so that one start names every such variable at once: partner.core refuses
# to start any process while one is here (partner/core/apps.py), after every settings module read its own.
ENVIRONMENT_MALFORMED: dict[str, str] = {}


def setting_refused(name: str, why: str, fallback):
    """Note that `name`'s value cannot be used (`why` completes "NAME ...", and never holds the
    value) and go on reading the settings with `fallback`."""
    ENVIRONMENT_MALFORMED.setdefault(name, why)
    return fallback


class _Reading(environ.Env):
    """django-environ's reader, whose typed reads (int, float, bool, list, json...) note a malformed
    value (`setting_refused`) instead of stopping at the first with a text that may echo it."""

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except ImproperlyConfigured:
            raise  # a required variable missing
        except Exception as exc:  # environ raises ValueError/KeyError/etc. with cryptic texts
            why = f"is malformed ({type(exc).__name__}); see .env.example"
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"Environment variable {var} {why}") from None
            return setting_refused(var, why, default)


class _Environment(_Reading):
    """The reader over a copy of the process environment, which the `.env` file fills in (`read_env`
    adds to its class's mapping): the process's own variables win, os.environ stays as it was."""

    ENVIRON = dict(os.environ)


# The process environment with the .env file: what every setting is read from.
env = _Environment()
# The process environment alone: what a production switch obeys (the .env file is a local run's).
process_env = _Reading()

# DJANGO_ENV_FILE names another file than the repository's .env (tests, several local set-ups);
# DJANGO_READ_DOT_ENV_FILE=false reads none (the benchmarks, deployments that want only real variables).
if process_env.bool("DJANGO_READ_DOT_ENV_FILE", default=True):
    _Environment.read_env(process_env.str("DJANGO_ENV_FILE", default=str(BASE_DIR / ".env")), overwrite=False)


def env_read(name: str, parse, fallback):
    """A variable read by a parser of its own (`parse(name)`: a database, cache or e-mail URL),
    noting a malformed value as the typed reads do (`_Reading`); `fallback` stands in for it meanwhile."""
    try:
        return parse(name)
    except Exception as exc:  # environ's ImproperlyConfigured of an unknown scheme too
        return setting_refused(
            name, f"is not a URL this application reads ({type(exc).__name__}); see .env.example", fallback
        )


# GENERAL
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#debug
DEBUG = False  # on in local runs only (config/settings/local.py)
# https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key
# Required in production; local runs fall back to a public one (config/settings/local.py).
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
# https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key-fallbacks
# Rotation: the new key in DJANGO_SECRET_KEY, the old one(s) here (comma-separated) until every
# admin session, panel session and password-reset link signed with them has expired (docs/security.md).
SECRET_KEY_FALLBACKS = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])
# https://docs.djangoproject.com/en/5.2/ref/settings/#allowed-hosts
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=[])
# https://docs.djangoproject.com/en/5.2/ref/settings/#time-zone
TIME_ZONE = "UTC"
USE_TZ = True
# Times to the second in the admin and the pages (config/formats/en/formats.py).
FORMAT_MODULE_PATH = ["config.formats"]
LANGUAGE_CODE = "en-us"
USE_I18N = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# The public address of this deployment: products pushed to the service point
# their interfaceUrl, adminInterfaceUrl and webhook url here.
PUBLIC_BASE_URL = env.str("PUBLIC_BASE_URL", default="http://127.0.0.1:8000").rstrip("/")

# DATABASES
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#databases
# https://django-environ.readthedocs.io/en/latest/types.html#environ-env-db-url


def database(url: str) -> dict:
    """The DATABASES entry of a DATABASE_URL, with our options (config/settings/test.py uses it too)."""
    fallback = f"sqlite:///{VAR_DIR / 'db.sqlite3'}"  # never used: the process does not start (ENVIRONMENT_MALFORMED)
    if url.split("://", 1)[0] not in ("sqlite", "postgres", "postgresql", "pgsql"):
        why = "must look like sqlite:///path/db.sqlite3 or postgres://user:password@host:5432/name"
        url = setting_refused("DATABASE_URL", why, fallback)
    config = env_read("DATABASE_URL", lambda _name: env.db_url_config(url), env.db_url_config(fallback))
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Web and worker write at the same time in local runs: wait for the lock
        # instead of failing, and take it when the transaction begins.
        config.setdefault("OPTIONS", {}).update(
            {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
        )
    config["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
    config["CONN_HEALTH_CHECKS"] = True
    return config


DATABASES = {"default": database(env.str("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"))}

# CACHES
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#caches
# The OAuth token lives here, so every web and worker process must share it:
# a file cache on one machine, Redis (CACHE_URL=redis://...) for several.
_FILE_CACHE = f"filecache://{VAR_DIR / 'cache'}"
CACHES = {
    "default": env_read(
        "CACHE_URL", lambda name: env.cache_url(name, default=_FILE_CACHE), env.cache_url_config(_FILE_CACHE)
    )
}

# APPS
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#installed-apps
# The sandbox (partner.sandbox) is not here: config/settings/local.py and test.py add it, production
# only when its process environment asks (SANDBOX_ENABLED below).
INSTALLED_APPS = [
    # First: its ready() prepares the metrics folder before any other app's ready() (the admin's
    # autodiscovery) imports a module that counts (partner/core/apps.py).
    "partner.core",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "oauth2_provider",
    "partner.catalog",
    "partner.inbox",
    "partner.fulfillment",
    "partner.ui",
    "partner.connector",
    "partner.operations",
]

# MIDDLEWARE
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#middleware
MIDDLEWARE = [
    "partner.core.middleware.TrustedProxyMiddleware",
    "partner.core.middleware.RequestIdMiddleware",
    # Every error under /api/v1/ as application/problem+json, the 413 below and 500s included.
    "partner.connector.problems.ProblemMiddleware",
    # A body past REQUEST_MAX_BYTES is refused from its Content-Length, before it is read.
    "partner.core.middleware.RequestSizeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (the page's script and style, the host's guest library) from gunicorn too.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# URLS
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#root-urlconf
ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

# REQUEST SIZES
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#data-upload-max-memory-size
# A form's fields (not its files) and a body read whole: at most this many bytes (Django's default).
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# https://docs.djangoproject.com/en/5.2/ref/settings/#file-upload-max-memory-size
# An uploaded file larger than this goes to a temporary file instead of memory (Django's default).
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# The largest request body of any kind, told by its Content-Length before it is read (413 beyond:
# partner/core/middleware.py). A staff upload of several documents of DOCUMENT_MAX_BYTES each is the
# largest body we take. The front proxy caps bodies without a Content-Length (docs/deployment.md).
REQUEST_MAX_BYTES = env.int("REQUEST_MAX_BYTES", default=100 * 1024 * 1024)

# TEMPLATES
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#templates
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# PASSWORDS
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#auth-password-validators
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# https://docs.djangoproject.com/en/5.2/ref/settings/#password-hashers
# Django's own, and last (so no password is ever made with it) the connector's OAuth client
# secrets' keyed hash (CLIENT_SECRET_HASHER below; why in partner/connector/oauth.py).
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    "partner.connector.oauth.ClientSecretHasher",
]

# STATIC
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#static-files
# https://whitenoise.readthedocs.io/en/stable/django.html
STATIC_URL = "static/"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # The host's guest library, installed with npm by `make setup` (not committed).
    ("vendor/em-ssf-guest", BASE_DIR / "node_modules" / "@elliemae" / "em-ssf-guest" / "dist"),
]
STATIC_ROOT = BASE_DIR / "staticfiles"
# WhiteNoise serves the files above straight from their folders, so `gunicorn config.wsgi`
# needs no collectstatic step and no other server; `collectstatic` still fills STATIC_ROOT
# for a CDN or a web server in front.
WHITENOISE_USE_FINDERS = True

# STORAGES (documents)
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#storages
# https://django-storages.readthedocs.io/en/latest/backends/amazon-S3.html
# Documents (generated reports, staff uploads) are files of Django's storage, never database rows:
# the file system under MEDIA_ROOT by default, or an S3-compatible bucket (django-storages) with
# DOCUMENT_STORAGE=s3. They are never served as public files: staff download them through the
# admin, lenders through views that check the order is theirs.
MEDIA_ROOT = env.str("MEDIA_ROOT", default=str(VAR_DIR / "media"))
DOCUMENT_STORAGE = env.str("DOCUMENT_STORAGE", default="filesystem")
if DOCUMENT_STORAGE not in ("filesystem", "s3"):
    DOCUMENT_STORAGE = setting_refused("DOCUMENT_STORAGE", "must be filesystem (the default) or s3", "filesystem")
if DOCUMENT_STORAGE == "filesystem":
    _documents_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
else:
    _documents_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env.str("DOCUMENTS_S3_BUCKET", default=""),  # required: partner.E008
            "endpoint_url": env.str("DOCUMENTS_S3_ENDPOINT_URL", default="") or None,  # MinIO, R2, ...
            "region_name": env.str("DOCUMENTS_S3_REGION", default="") or None,
            "access_key": env.str("DOCUMENTS_S3_ACCESS_KEY_ID", default="") or None,  # else the instance's role
            "secret_key": env.str("DOCUMENTS_S3_SECRET_ACCESS_KEY", default="") or None,
            "location": env.str("DOCUMENTS_S3_PREFIX", default=""),
            "default_acl": "private",
            "querystring_auth": True,
            "file_overwrite": False,
        },
    }
# Files on one machine's disk are seen by the processes that mount it only: with
# DOCUMENT_STORAGE=filesystem a deployment says that every web and worker process reads the same
# MEDIA_ROOT (one machine without containers, or compose's shared `documents` volume), else the
# servers refuse to start (partner.E015).
DOCUMENTS_SINGLE_HOST = env.bool("DOCUMENTS_SINGLE_HOST", default=False)
# Kubernetes sets KUBERNETES_SERVICE_HOST in every container: there each pod has a disk of its own,
# so documents must be in S3 whatever DOCUMENTS_SINGLE_HOST says (partner.E015).
ON_KUBERNETES = bool(env.str("KUBERNETES_SERVICE_HOST", default=""))
STORAGES = {
    "default": _documents_storage,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# EMAIL
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#email-backend
# https://django-environ.readthedocs.io/en/latest/types.html#environ-env-email-url
# Staff are told of a new staff-worked order and of one past its due time. EMAIL_URL as
# django-environ reads it (smtp+tls://user:password@host:587); the console by default.
# An empty EMAIL_URL is the console too; `check --deploy` fails on it (partner.E014).
_CONSOLE_MAIL = "consolemail://"
vars().update(
    env_read(
        "EMAIL_URL",
        lambda name: env.email_url_config(env.str(name, default="") or _CONSOLE_MAIL),
        env.email_url_config(_CONSOLE_MAIL),
    )
)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="orders@partner.example")

# SECURITY
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#security
# What every kind of process shares; production adds HSTS, the HTTPS redirect and Secure cookies
# (config/settings/production.py).
# The UI lives in the host's iframe: only HOST_ORIGINS may frame it (CSP frame-ancestors, set per
# embed view, partner/core/framing.py); every other page keeps X-Frame-Options DENY.
HOST_ORIGINS = env.list("HOST_ORIGINS", default=[PUBLIC_BASE_URL])
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# The load balancers or proxies (addresses or networks) whose X-Forwarded-Proto and X-Forwarded-For
# are believed; from anyone else the headers are ignored (partner/core/middleware.py, and gunicorn's
# forwarded_allow_ips in gunicorn.conf.py, which reads the same variable).
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])
# The preflight at start (partner/core/checks.py: preflight_at_start): servers refuse to start on an
# unsafe or missing setting. On in production only.
PREFLIGHT_AT_START = False

# ------------------------------------------------------------------------------
# OUR APPS: one section each, in the order of their layers (partner/<app>/__init__.py says what
# each is for).
# ------------------------------------------------------------------------------

# partner.core: leases, sweeps, retention, rate limits, metrics
# ------------------------------------------------------------------------------
# partner/core/__init__.py
# Secrets at rest (product signing secrets, credential values we send on) are encrypted with Fernet;
# several comma-separated keys allow rotation, newest first. Required in production; local runs fall
# back to a public one (config/settings/local.py).
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS", default=[])
# A worker's hold on a notification or an order lasts this long unless renewed; it renews it every
# third of this while it works, so a dead worker's order is free again within this many seconds,
# and picked up by another worker within a third of it more (partner/core/leases.py).
LEASE_SECONDS = env.float("LEASE_SECONDS", default=15.0)
# A notification or order left this long with no worker holding it had its message lost: the
# sweep hands it to the broker again (partner/core/leases.py).
STALL_SECONDS = env.int("STALL_SECONDS", default=120)
# How often the sweeps run (seconds; CELERY_BEAT_SCHEDULE below).
SWEEP_INTERVAL = env.int("SWEEP_INTERVAL", default=30)
# Retention (partner/core/retention.py): borrowers' personal data is kept this many days, then purged
# by the daily task (`core.purge`; `manage.py purge --dry-run` says what it would do): personal fields
# erased with the row kept, or whole rows deleted. Counted from when a row was finished (a
# notification processed, an order completed or failed); nothing of an open order is ever touched.
# 0 keeps that kind for ever. Each app's RETENTION_* setting is in its own section below.
#
# Rate limits (partner/core/ratelimits.py; https://django-ratelimit.readthedocs.io/en/stable/rates.html):
# a rate is "count/period", the period s, m, h or d with an optional multiplier ("10/m", "100/5m").
# Counted in the default cache per client address (REMOTE_ADDR as TrustedProxyMiddleware leaves
# it), so the limits hold across processes only with a shared cache (Redis; partner.E005); beyond
# a limit the answer is 429 with Retry-After.


def rate(name: str, default: str) -> str:
    value = env.str(name, default=default).strip()
    count, _, period = value.partition("/")
    multiplier, unit = period[:-1] or "1", period[-1:]
    well_formed = count.isdecimal() and multiplier.isdecimal() and unit in ("s", "m", "h", "d")
    if not well_formed or int(count) == 0 or int(multiplier) == 0:
        return setting_refused(name, "must be a rate like 60/m (a count per s, m, h or d, e.g. 100/5m)", default)
    return value


# The admin's sign-in: POSTs per address, and failed attempts per username tried.
RATELIMIT_ADMIN_LOGIN = rate("RATELIMIT_ADMIN_LOGIN", "10/m")
# Metrics (partner/core/metrics.py; https://prometheus.github.io/client_python/multiprocess/):
# Prometheus figures at /metrics. Every process of a host counts into one folder (the client
# library's multiprocess mode), emptied when the host's processes start; each process makes it and
# names it to the library when it starts (partner/core/apps.py).
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics"))
# Closed to the public (local runs open it): a bearer token or the networks named open it.
METRICS_PUBLIC = False
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=[])
# A worker host without a web process serves its processes' figures on this port (0: not served).
WORKER_METRICS_PORT = env.int("WORKER_METRICS_PORT", default=0)

# partner.platform: the service's API (the platform we integrate with)
# ------------------------------------------------------------------------------
# partner/platform/__init__.py
SVC_BASE_URL = env.str("SVC_BASE_URL", default=f"{PUBLIC_BASE_URL}/sandbox").rstrip("/")
SVC_TOKEN_URL = env.str("SVC_TOKEN_URL", default=f"{SVC_BASE_URL}/oauth2/v1/token")
# The confidential client. A demo SVC_CLIENT_ID alone grants nothing (`check --deploy` reports it,
# partner.E001); the client secret is required in production, and local runs fall back to the
# sandbox's demo one (config/settings/local.py).
SVC_CLIENT_ID = env.str("SVC_CLIENT_ID", default=demo_values.SANDBOX_CLIENT_ID)
SVC_CLIENT_SECRET = env.str("SVC_CLIENT_SECRET", default="")
SVC_SCOPE = env.str("SVC_SCOPE", default="pc pcapi")
# Webhook signing secrets accepted (rotation: old and new together); a product's own secret is
# accepted too, so production may leave this empty. Local runs fall back to the sandbox's demo one.
SVC_SIGNING_SECRETS = env.list("SVC_SIGNING_SECRETS", default=[])
SVC_SIGNATURE_HEADER = env.str("SVC_SIGNATURE_HEADER", default="Svc-Signature")
SVC_PAT_HEADER = env.str("SVC_PAT_HEADER", default="X-Svc-PAT")


def urn_part(name: str, default: str, problem) -> str:
    """A part of the service's URNs (partner/platform/urns.py), refused at start when `problem` finds one."""
    value = env.str(name, default=default)
    reason = problem(value)
    if reason:
        return setting_refused(name, f"{reason}; see docs/deployment.md", default)
    return value


# The words of the service's URNs: `<prefix>:<platform>:transaction`, `<prefix>:<host>:<instance>`.
# The spec's are the defaults; a real platform's are in its onboarding documents (docs/deployment.md).
SVC_URN_PREFIX = urn_part("SVC_URN_PREFIX", "urn:svc", urns.prefix_problem)
SVC_URN_PLATFORM = urn_part("SVC_URN_PLATFORM", "platform", urns.word_problem)
SVC_URN_HOST = urn_part("SVC_URN_HOST", "host", urns.word_problem)
# (connect, read) seconds for every call to the service.
SVC_TIMEOUT = (env.float("SVC_CONNECT_TIMEOUT", default=5.0), env.float("SVC_READ_TIMEOUT", default=30.0))
SVC_MAX_RETRIES = env.int("SVC_MAX_RETRIES", default=3)
# Transport retries (GET, PUT and harmless POST/PATCH): backoff doubled per attempt up to the
# maximum, with jitter; a Retry-After longer than SVC_RETRY_AFTER_MAX goes back to the task instead.
SVC_RETRY_BACKOFF = env.float("SVC_RETRY_BACKOFF", default=0.5)
SVC_RETRY_BACKOFF_MAX = env.float("SVC_RETRY_BACKOFF_MAX", default=8.0)
SVC_RETRY_AFTER_MAX = env.float("SVC_RETRY_AFTER_MAX", default=30.0)
# Where an upload slot's location may point (partner/platform/locations.py). Strict everywhere but in
# local runs, with no variable to turn it off: https only, and only to public addresses.
# SVC_UPLOAD_HOSTS: the hosts allowed (`uploads.example.com`, or `.example.com` for a domain and its
# subdomains), in every mode; empty allows any host.
SVC_UPLOAD_LOCATION_STRICT = True
SVC_UPLOAD_HOSTS = env.list("SVC_UPLOAD_HOSTS", default=[])

# partner.catalog: products, credential definitions, partner accounts
# ------------------------------------------------------------------------------
# partner/catalog/__init__.py
# Every order reads the catalog (products, credential definitions) from the cache: a change drops it
# at once; these seconds bound a copy that a change made outside Django (SQL, a restore) left behind.
CATALOG_CACHE_SECONDS = env.int("CATALOG_CACHE_SECONDS", default=300)

# partner.inbox: webhooks in
# ------------------------------------------------------------------------------
# partner/inbox/__init__.py
# The largest body accepted on POST /v1/webhooks.
WEBHOOK_MAX_BYTES = env.int("WEBHOOK_MAX_BYTES", default=256 * 1024)
# The inbox relay in each worker hands stored notifications to the broker; it looks again after
# this many seconds when there was nothing to hand over (0: no relay, the sweep alone enqueues).
INBOX_RELAY_INTERVAL = env.float("INBOX_RELAY_INTERVAL", default=0.2)
# /healthz/ready is "degraded" when no relay round was seen for this long (0: not checked), or the
# inbox's backlog is past these many rows or its oldest row waited this long (partner/inbox/health.py).
INBOX_RELAY_STALE_SECONDS = env.int("INBOX_RELAY_STALE_SECONDS", default=60)
INBOX_BACKLOG_WARN_ROWS = env.int("INBOX_BACKLOG_WARN_ROWS", default=1000)
INBOX_BACKLOG_WARN_SECONDS = env.int("INBOX_BACKLOG_WARN_SECONDS", default=300)
# A webhook signed with one product's secret but naming another is answered 401 and kept as `refused`
# (partner/inbox/intake.py): its headers, its body's digest and its first INBOX_REFUSED_EXCERPT_BYTES
# only; at most INBOX_REFUSED_MAX_PER_WINDOW rows per signing product every
# INBOX_REFUSED_WINDOW_SECONDS, the rest counted (partner_webhooks_refused_unstored) and not stored.
INBOX_REFUSED_EXCERPT_BYTES = env.int("INBOX_REFUSED_EXCERPT_BYTES", default=2048)
INBOX_REFUSED_MAX_PER_WINDOW = env.int("INBOX_REFUSED_MAX_PER_WINDOW", default=100)
INBOX_REFUSED_WINDOW_SECONDS = env.int("INBOX_REFUSED_WINDOW_SECONDS", default=3600)
# Retention (partner.core above): the notifications' bodies and headers, and their rows (dedupe keys);
# refused notifications (evidence of a forged or misdirected webhook) on their own, shorter, days.
RETENTION_NOTIFICATION_BODY_DAYS = env.int("RETENTION_NOTIFICATION_BODY_DAYS", default=30)
RETENTION_NOTIFICATION_DAYS = env.int("RETENTION_NOTIFICATION_DAYS", default=365)
RETENTION_REFUSED_NOTIFICATION_DAYS = env.int("RETENTION_REFUSED_NOTIFICATION_DAYS", default=7)

# partner.fulfillment: orders, automated and staff work, deliveries, reconciliation
# ------------------------------------------------------------------------------
# partner/fulfillment/__init__.py
# Our company as lenders see it: `respondingParty` of every response and the letterhead of the
# reports (partner/fulfillment/automated/fulfillers/base.py: partner_party). Public contact details only.
# The defaults are a demo company (partner/core/demo_values.py): `check --deploy` fails on them (partner.E013).
PARTNER_NAME = env.str("PARTNER_NAME", default=demo_values.DEMO_PARTNER["PARTNER_NAME"])
PARTNER_ADDRESS = env.str("PARTNER_ADDRESS", default=demo_values.DEMO_PARTNER["PARTNER_ADDRESS"])  # street line
PARTNER_CITY = env.str("PARTNER_CITY", default=demo_values.DEMO_PARTNER["PARTNER_CITY"])
PARTNER_STATE = env.str("PARTNER_STATE", default=demo_values.DEMO_PARTNER["PARTNER_STATE"])
PARTNER_POSTAL_CODE = env.str("PARTNER_POSTAL_CODE", default=demo_values.DEMO_PARTNER["PARTNER_POSTAL_CODE"])
PARTNER_CONTACT_NAME = env.str("PARTNER_CONTACT_NAME", default=demo_values.DEMO_PARTNER["PARTNER_CONTACT_NAME"])
PARTNER_CONTACT_ROLE = env.str("PARTNER_CONTACT_ROLE", default=demo_values.DEMO_PARTNER["PARTNER_CONTACT_ROLE"])
PARTNER_PHONE = env.str("PARTNER_PHONE", default=demo_values.DEMO_PARTNER["PARTNER_PHONE"])
# The fax is shown where a response carries one.
PARTNER_FAX = env.str("PARTNER_FAX", default=demo_values.DEMO_PARTNER["PARTNER_FAX"])
PARTNER_EMAIL = env.str("PARTNER_EMAIL", default=demo_values.DEMO_PARTNER["PARTNER_EMAIL"])
# A PNG or JPEG drawn at the top left of the reports; none when empty (or unreadable: a warning is
# logged and the report goes out without it).
PARTNER_LOGO_PATH = env.str("PARTNER_LOGO_PATH", default="")
# The largest document staff may attach (its kinds are checked by content, not by name).
DOCUMENT_MAX_BYTES = env.int("DOCUMENT_MAX_BYTES", default=20 * 1024 * 1024)
# How often the reconciliation runs (seconds). Its full pass (every page of the service's
# transaction list) runs at most every RECONCILE_FULL_INTERVAL, in the run that finds it due (its
# time is kept in the database, so a restarted scheduler does not put it off); the other runs read
# only the list's end (partner/fulfillment/recovery/reconciliation.py). 0: every run reads every page.
RECONCILE_INTERVAL = env.int("RECONCILE_INTERVAL", default=300)
RECONCILE_FULL_INTERVAL = env.int("RECONCILE_FULL_INTERVAL", default=86400)
# A delivered order whose "processed" callback has not come after this long is shown as awaiting
# confirmation (admin filter, /healthz warning); the reconciliation completes it when the service's
# transaction list says it is completed, and staff can confirm it by hand.
CONFIRMATION_WAIT_SECONDS = env.int("CONFIRMATION_WAIT_SECONDS", default=900)
# Retention (partner.core above): an order's response and errors, its attachments' bytes (PDFs), its step rows.
RETENTION_ORDER_DATA_DAYS = env.int("RETENTION_ORDER_DATA_DAYS", default=90)
RETENTION_DOCUMENT_DAYS = env.int("RETENTION_DOCUMENT_DAYS", default=90)
RETENTION_STEP_DAYS = env.int("RETENTION_STEP_DAYS", default=365)

# partner.connector: the partner's own order system (events out, answers in)
# ------------------------------------------------------------------------------
# partner/connector/__init__.py
# An event its endpoint did not take is tried again after the project's backoff (partner/core/retries.py):
# a wait drawn below a ceiling that starts at CONNECTOR_RETRY_BACKOFF and doubles per try up to
# CONNECTOR_RETRY_BACKOFF_MAX (seconds), for CONNECTOR_RETRY_PATIENCE (seconds) from its first failed
# try, the last try at that moment: about a day, as Svix. Then the event fails and its connection is
# disabled with a notice.
CONNECTOR_RETRY_BACKOFF = env.float("CONNECTOR_RETRY_BACKOFF", default=5.0)
CONNECTOR_RETRY_BACKOFF_MAX = env.float("CONNECTOR_RETRY_BACKOFF_MAX", default=10 * 3600.0)
CONNECTOR_RETRY_PATIENCE = env.float("CONNECTOR_RETRY_PATIENCE", default=24 * 3600.0)
# One POST of an event waits this long for an answer (seconds).
CONNECTOR_SEND_TIMEOUT = env.float("CONNECTOR_SEND_TIMEOUT", default=5.0)
# The relay in each worker hands due events to the workers; it looks again after this many seconds
# when there was nothing to hand over (0: events are not sent from this deployment's workers).
CONNECTOR_RELAY_INTERVAL = env.float("CONNECTOR_RELAY_INTERVAL", default=0.5)
# An Idempotency-Key's first answer is replayed for this long (hours), then the key is forgotten.
CONNECTOR_IDEMPOTENCY_HOURS = env.int("CONNECTOR_IDEMPOTENCY_HOURS", default=48)
# The API's OAuth 2.0 server (django-oauth-toolkit, https://django-oauth-toolkit.readthedocs.io/en/latest/settings.html):
# client credentials only, one client per partner system (each connection's client is made
# `client-credentials`, and the server refuses a client any other grant); access tokens live an
# hour. Everything else follows RFC 9700 (OAuth 2.0 Security Best Current Practice) as the toolkit
# offers it, each gate on so that a regression is an error of `check --deploy`: no implicit or
# password grant, PKCE required (S256 only) should a code flow ever be added, tokens only in the
# Authorization header, tokens stored hashed (a stolen database holds no usable token), https
# redirect URIs only, refresh-token replay revokes the family (docs/security.md).
OAUTH2_PROVIDER = {
    "SCOPES": {"read": "Read orders and events", "answer": "Answer orders"},
    "DEFAULT_SCOPES": ["read", "answer"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.int("CONNECTOR_TOKEN_SECONDS", default=3600),
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https"],
    "ALLOW_URI_WILDCARDS": False,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # Refuses a client id no client can have (a NUL byte) before the lookup PostgreSQL would refuse;
    # equal work for an unknown client id.
    "OAUTH2_VALIDATOR_CLASS": "partner.connector.oauth.ClientCredentialsValidator",
    # Client secrets (128 random characters) under a keyed HMAC-SHA256, not PBKDF2 (partner/connector/oauth.py).
    "CLIENT_SECRET_HASHER": "client_hmac_sha256",
}
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
# Requests per OAuth client to the API (a rate as in partner.core above; past it 429 with
# Retry-After), and token requests per address: a partner system that loops, or one guessing
# client secrets, costs a 429 and nothing more.
RATELIMIT_API = rate("RATELIMIT_API", "600/m")
RATELIMIT_API_TOKEN = rate("RATELIMIT_API_TOKEN", "30/m")

# partner.ui: the embedded pages and the origin proxy
# ------------------------------------------------------------------------------
# partner/ui/__init__.py
# The page renews its origin with the service this often (seconds; an origin lives 300 s).
UI_ORIGIN_REFRESH_AFTER = env.int("UI_ORIGIN_REFRESH_AFTER", default=240)
# While an automated order runs, the lender's open panel asks for news this often (seconds); while a
# staff-worked order is with staff (hours or days), this often.
UI_PROGRESS_POLL_SECONDS = env.int("UI_PROGRESS_POLL_SECONDS", default=3)
UI_STAFF_POLL_SECONDS = env.int("UI_STAFF_POLL_SECONDS", default=15)
# The panel session (partner/ui/panel_sessions.py): once the origin proxy checked the origin with the
# service, the panel's polls and downloads show this signed token instead, for this many seconds.
UI_PANEL_SESSION_SECONDS = env.int("UI_PANEL_SESSION_SECONDS", default=300)
# The embedded page's JSON reads that each cost the service a call with the lender's token (the origin
# proxy, an order's progress, the order check) share one count per address (a rate as in partner.core
# above). A page polling its order takes 20 a minute: raise this when many lenders reach us from one address.
RATELIMIT_ORIGIN = rate("RATELIMIT_ORIGIN", "120/m")

# partner.sandbox: the service emulator (installed only where SANDBOX_ENABLED)
# ------------------------------------------------------------------------------
# partner/sandbox/__init__.py
# Its host API hands out partner access tokens to anyone: never in production's INSTALLED_APPS unless
# the process environment asks (`check --deploy` then fails, partner.E002). Each settings module
# says; the values below are used only where it is installed.
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
# Retention (partner.core above): the emulator's transactions and what hangs on them.
RETENTION_SANDBOX_DAYS = env.int("RETENTION_SANDBOX_DAYS", default=7)

# CELERY
# ------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
# Every CELERY_* setting configures the Celery app (config/celery.py).
# The default broker is kombu's SQLAlchemy transport on one SQLite file, var/broker.sqlite3: no server,
# so `make run` works anywhere, and a worker never reads half a message (partner/core/brokers.py).
# Production refuses it, and any broker that needs no server, at start (config/settings/production.py):
# it sets CELERY_BROKER_URL=redis://... or amqp://... (`check --deploy` says it too, partner.E003).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=brokers.sqlite_broker_url(VAR_DIR / "broker.sqlite3"))
_local_broker_file = brokers.sqlite_broker_path(CELERY_BROKER_URL)
if _local_broker_file is not None:
    # No visibility timeout on this transport: the messages a worker held when it was killed
    # (SIGKILL; a normal stop gives them back) are not delivered again. The sweeps hand the stalled
    # notifications and orders to the broker again after STALL_SECONDS, as after any lost message.
    # The file, kombu's tables and the default queue are made when a process's Celery app is
    # configured (config/celery.py), before its processes could race to make them.
    CELERY_BROKER_TRANSPORT_OPTIONS = brokers.sqlite_broker_options(_local_broker_file)
    # Results (only `check_worker` waits for one) in a SQLite file of their own, beside it.
    _default_results = f"db+sqlite:///{_local_broker_file.with_name('celery-results.sqlite3')}"
    CELERY_DATABASE_ENGINE_OPTIONS = {"connect_args": {"timeout": brokers.SQLITE_BUSY_TIMEOUT}}
else:
    # Stay under the visibility timeout so an unacknowledged task is not
    # redelivered while it still runs (time limits below are far shorter).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    _default_results = CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "rpc://"
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=_default_results)
CELERY_TIMEZONE = TIME_ZONE
# JSON only: a task carries ids, never pickled objects or secrets.
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = 3600
# Ignore results unless a caller asks: our tasks record their outcome in the database.
CELERY_TASK_IGNORE_RESULT = True
# Acknowledge after the task ran, so a worker that dies mid-task leaves it queued.
CELERY_TASK_ACKS_LATE = True
# A killed child process requeues its task instead of acknowledging it.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# The worker's model: one process whose tasks run in threads (`celery -A config worker` with no
# --pool runs it; the Procfile and docs/deployment.md name it). A task spends almost all of its
# time waiting on the service (300-500 ms a call), and a waiting thread costs no process: 64
# threads keep one worker host as busy at the platform's real latency as at 1 ms, in about 200 MiB,
# where 2 prefork processes made 0.12 of their 1 ms rate in 445 MiB and 32 threads 0.69-0.78
# (docs/performance.md). Each thread may hold a PostgreSQL connection (docs/deployment.md).
# Thread pools do not enforce CELERY_TASK_*_TIME_LIMIT: every call has its SVC_TIMEOUT instead.
CELERY_WORKER_POOL = env.str("CELERY_WORKER_POOL", default="threads")
CELERY_WORKER_CONCURRENCY = env.int("CELERY_WORKER_CONCURRENCY", default=64)
# One message at a time per thread (64 in flight per worker): a lost worker's are redelivered.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task stuck on the service is interrupted (soft) and then killed (hard).
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=120)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=150)
# A task published by a request or a task (partner/core/enqueue.py) holds its caller at most this
# long: one attempt with these connect/read/write timeouts; past it the stored row waits for the sweep.
BROKER_PUBLISH_SECONDS = env.float("BROKER_PUBLISH_SECONDS", default=1.0)
# Publishing retries a little when the broker blips, then gives up: the inbox sweeper re-enqueues.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
# Bounded retries with exponential backoff and jitter (used by every task that calls the service;
# partner/core/retries.py). A 429 or 503 with Retry-After is the service asking us to wait: the task
# comes back after that wait and spends no retry, for CELERY_TASK_RATE_LIMIT_PATIENCE seconds
# after the first such wait; past it, those count too. Every other transient error counts.
CELERY_TASK_MAX_RETRIES = env.int("CELERY_TASK_MAX_RETRIES", default=5)
CELERY_TASK_RATE_LIMIT_PATIENCE = env.int("CELERY_TASK_RATE_LIMIT_PATIENCE", default=3600)
CELERY_TASK_RETRY_BACKOFF = 2  # seconds, doubled per attempt
CELERY_TASK_RETRY_BACKOFF_MAX = 300  # never wait longer than this between attempts (a Retry-After too)
CELERY_TASK_RETRY_JITTER = True  # spread retries so that workers do not stampede the service
# Celery's Django fix-up closes every database connection before and after each task unless
# this is set: a new PostgreSQL connection (and backend process) per task. With it, a task's
# connections live like a request's: closed when older than DATABASE_CONN_MAX_AGE or unusable
# (config/celery.py), and by the fix-up after this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Our logging configuration stays in charge of the root logger.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# What a task prints (the console e-mail backend of local runs) is logged as INFO, not as a warning.
CELERY_WORKER_REDIRECT_STDOUTS_LEVEL = "INFO"
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The periodic jobs (seconds: their settings are in the apps' sections above).
CELERY_BEAT_SCHEDULE = {
    "inbox-sweep": {"task": "inbox.sweep", "schedule": SWEEP_INTERVAL},
    "orders-sweep": {"task": "fulfillment.sweep", "schedule": SWEEP_INTERVAL},
    # The cheap pass each time; the full pass in the run that finds RECONCILE_FULL_INTERVAL passed.
    "transactions-reconcile": {"task": "fulfillment.reconcile", "schedule": RECONCILE_INTERVAL},
    "products-pull": {"task": "catalog.pull", "schedule": RECONCILE_INTERVAL},
    "data-purge": {"task": "core.purge", "schedule": 24 * 60 * 60},  # once a day (RETENTION_* settings)
    # Staff-worked orders past their due time: staff are told once (partner/fulfillment/staff/notices.py).
    "staff-overdue": {"task": "fulfillment.overdue", "schedule": 300},
}

# REST FRAMEWORK
# ------------------------------------------------------------------------------
# https://www.django-rest-framework.org/api-guide/settings/
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "partner.core.api.exception_handler",
}
# https://drf-spectacular.readthedocs.io/en/latest/settings.html
SPECTACULAR_SETTINGS = {
    "TITLE": "Partner application API",
    "DESCRIPTION": "The partner application's API: under /api/v1/ the connector's, which a partner's own order "
    "system calls (OAuth 2.0 client credentials, docs/connecting.md); under /v1/ the platform's webhook "
    "receiver, and the origin proxy and transaction status the embedded panel reads.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The connector's API: OAuth 2.0 client credentials at its token endpoint (docs/connecting.md).
    "OAUTH2_FLOWS": ["clientCredentials"],
    "OAUTH2_TOKEN_URL": "/api/v1/oauth/token",
    "OAUTH2_SCOPES": OAUTH2_PROVIDER["SCOPES"],
    "APPEND_COMPONENTS": {
        "securitySchemes": {
            "clientBasic": {
                "type": "http",
                "scheme": "basic",
                "description": "The token endpoint's client authentication: client id and secret.",
            }
        }
    },
}

# LOGGING
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/topics/logging/
# One line per event with the request id and the ids of the work at hand (notification, order,
# transaction: partner.core.logging.log_context); the redaction filter keeps secrets (client secret,
# signing secrets, passwords, tokens) out of every line. LOG_FORMAT=json writes one JSON object per
# line instead of text, for a log collector (gunicorn.conf.py follows it for gunicorn's own lines).
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOG_FORMAT = env.str("LOG_FORMAT", default="text").strip().lower() or "text"
if LOG_FORMAT not in ("text", "json"):
    LOG_FORMAT = setting_refused("LOG_FORMAT", "must be text (the default) or json", "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "partner.core.logging.RequestIdFilter"},
        "redact": {"()": "partner.core.logging.RedactSecretsFilter"},
    },
    "formatters": {
        "line": {
            "()": "partner.core.logging.OneLineFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s%(log_context_text)s] %(message)s",
            "defaults": {"request_id": "-", "log_context_text": ""},  # a handler without RequestIdFilter
        },
        "json": {"()": "partner.core.logging.JsonLineFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "line",
            "filters": ["request_id", "redact"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # runserver's request lines hold query strings (the origin page's partner access
        # token): through our handler and its filter, not Django's default one.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.db.backends": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
    },
}
DEFAULT_EXCEPTION_REPORTER_FILTER = "partner.core.logging.SecretsExceptionReporterFilter"

# ERROR REPORTING
# ------------------------------------------------------------------------------
# https://docs.sentry.io/platforms/python/integrations/django/
# Sentry, only when SENTRY_DSN is set: errors of requests and tasks and lines logged at ERROR, with
# secrets, credential headers and request bodies scrubbed (partner/core/error_reporting.py). Started
# here, as Sentry's Django integration asks, so that it sees the whole start-up; nothing without a DSN.
SENTRY_DSN = env.str("SENTRY_DSN", default="")
if SENTRY_DSN:
    from partner.core.error_reporting import error_reporting_init  # noqa: E402 - only with a DSN

    _SENTRY_TRACES_SAMPLE_RATE = env.float("SENTRY_TRACES_SAMPLE_RATE", default=None)
    if _SENTRY_TRACES_SAMPLE_RATE is not None and not 0 <= _SENTRY_TRACES_SAMPLE_RATE <= 1:
        _SENTRY_TRACES_SAMPLE_RATE = setting_refused("SENTRY_TRACES_SAMPLE_RATE", "must be between 0 and 1", None)
    error_reporting_init(
        dsn=SENTRY_DSN,
        environment=env.str("SENTRY_ENVIRONMENT", default="") or None,
        traces_sample_rate=_SENTRY_TRACES_SAMPLE_RATE,
        secret_headers=[SVC_PAT_HEADER, SVC_SIGNATURE_HEADER],
    )
