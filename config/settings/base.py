"""Settings of the partner application, read from the environment.

Every variable is read here through django-environ (a `.env` file at the
repository root works too; real environment variables win over it). With
`DJANGO_DEBUG` off the defaults are the production ones: a secret key, the
allowed hosts, the field encryption key and the service's client secret must be
given, no demo value of the sandbox or of local runs is accepted, cookies are
secure, HSTS is on and the sandbox stays unmounted unless the process
environment itself (never `.env`) asks for it. `manage.py check --deploy` then
checks the rest of a deployment (partner/core/checks.py).

`.env.example` documents each variable; `config/settings/test.py` adjusts a
few for the test suite.
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"  # run-time files of local runs: broker folders, cache, beat schedule

# What the process was started with, before `.env` adds to it: the file `make setup` writes is a
# local run's, so some switches obey only the process environment when DJANGO_DEBUG is off.
_PROCESS_ENVIRON = frozenset(os.environ)

env = environ.Env()
# DJANGO_ENV_FILE names another file than the repository's .env (tests, several local set-ups).
_ENV_FILE = Path(env.str("DJANGO_ENV_FILE", default=str(BASE_DIR / ".env")))
if env.bool("DJANGO_READ_DOT_ENV_FILE", default=True) and _ENV_FILE.is_file():
    environ.Env.read_env(_ENV_FILE, overwrite=False)

# Local runs' and the sandbox's values: public (they are in this repository), so they are only
# ever used with DJANGO_DEBUG on, and refused with it off (partner/core/demo_values.py).
from partner.core import demo_values as _demo  # noqa: E402 - a module of constants, no Django import

_LOCAL_SECRET_KEY = _demo.LOCAL_SECRET_KEY
_LOCAL_FIELD_ENCRYPTION_KEY = _demo.LOCAL_FIELD_ENCRYPTION_KEY
_SANDBOX_CLIENT_ID = _demo.SANDBOX_CLIENT_ID
_SANDBOX_CLIENT_SECRET = _demo.SANDBOX_CLIENT_SECRET
_SANDBOX_SIGNING_SECRET = _demo.SANDBOX_SIGNING_SECRET


def _read(name, reader, *args, **kwargs):
    """Read one variable, turning a malformed value into a message that names it."""
    try:
        return reader(name, *args, **kwargs)
    except ImproperlyConfigured:
        raise
    except Exception as exc:  # environ raises ValueError/KeyError/etc. with cryptic texts
        raise ImproperlyConfigured(
            f"Environment variable {name} is malformed ({type(exc).__name__}); see .env.example"
        ) from None


# GENERAL
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#debug
DEBUG = _read("DJANGO_DEBUG", env.bool, default=False)

# https://docs.djangoproject.com/en/5.2/ref/settings/#secret-key
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not DEBUG and SECRET_KEY in ("", _LOCAL_SECRET_KEY):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off, and not the local runs' one "
        "(generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))')"
    )
SECRET_KEY = SECRET_KEY or _LOCAL_SECRET_KEY

# https://docs.djangoproject.com/en/5.2/ref/settings/#allowed-hosts
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS is required when DJANGO_DEBUG is off")

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
_DATABASE_URL = env.str("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
if _DATABASE_URL.split("://", 1)[0] not in ("sqlite", "postgres", "postgresql", "pgsql"):
    raise ImproperlyConfigured(
        "DATABASE_URL must look like sqlite:///path/db.sqlite3 or postgres://user:password@host:5432/name"
    )
DATABASES = {"default": _read("DATABASE_URL", lambda _name: env.db_url_config(_DATABASE_URL))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web and worker write at the same time in local runs: wait for the lock
    # instead of failing, and take it when the transaction begins.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {"timeout": 30, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"}
    )
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

# CACHES
# ------------------------------------------------------------------------------
# The OAuth token lives here, so every web and worker process must share it:
# a file cache on one machine, Redis (CACHE_URL=redis://...) for several.
CACHES = {"default": _read("CACHE_URL", env.cache_url, default=f"filecache://{VAR_DIR / 'cache'}")}
# Every order reads the catalog (products, credential definitions) from it: a change drops it at
# once; these seconds bound a copy that a change made outside Django (SQL, a restore) left behind.
CATALOG_CACHE_SECONDS = _read("CATALOG_CACHE_SECONDS", env.int, default=300)

# APPS
# ------------------------------------------------------------------------------
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "partner.core",
    "partner.catalog",
    "partner.inbox",
    "partner.fulfillment",
    "partner.ui",
    "partner.sandbox",
]

MIDDLEWARE = [
    "partner.core.middleware.TrustedProxyMiddleware",
    "partner.core.middleware.RequestIdMiddleware",
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

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# STATIC
# ------------------------------------------------------------------------------
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

# DOCUMENTS
# ------------------------------------------------------------------------------
# Documents (generated reports, staff uploads) are files of Django's storage, never database rows:
# the file system under MEDIA_ROOT by default, or an S3-compatible bucket (django-storages) with
# DOCUMENT_STORAGE=s3. They are never served as public files: staff download them through the
# admin, lenders through views that check the order is theirs.
MEDIA_ROOT = env.str("MEDIA_ROOT", default=str(VAR_DIR / "media"))
DOCUMENT_STORAGE = env.str("DOCUMENT_STORAGE", default="filesystem")
if DOCUMENT_STORAGE == "filesystem":
    _documents_storage = {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": MEDIA_ROOT}}
elif DOCUMENT_STORAGE == "s3":
    # https://django-storages.readthedocs.io/en/latest/backends/amazon-S3.html
    _documents_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": _read("DOCUMENTS_S3_BUCKET", env.str),
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
else:
    raise ImproperlyConfigured("DOCUMENT_STORAGE must be filesystem (the default) or s3")
STORAGES = {
    "default": _documents_storage,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# The largest document staff may attach, and the kinds (checked by content, not by name).
DOCUMENT_MAX_BYTES = env.int("DOCUMENT_MAX_BYTES", default=20 * 1024 * 1024)

# While a staff-worked order is with staff (hours or days), the lender's open panel asks for news
# this often (seconds); an automated order's every 3 s.
UI_STAFF_POLL_SECONDS = env.int("UI_STAFF_POLL_SECONDS", default=15)
# The panel session (partner/ui/panel_sessions.py): once the origin proxy checked the origin with the
# service, the panel's polls and downloads show this signed token instead, for this many seconds; the
# page renews it with the origin (every UI_ORIGIN_REFRESH_AFTER seconds, 240 by default).
UI_PANEL_SESSION_SECONDS = env.int("UI_PANEL_SESSION_SECONDS", default=300)

# E-MAIL
# ------------------------------------------------------------------------------
# Staff are told of a new staff-worked order and of one past its due time. EMAIL_URL as
# django-environ reads it (smtp+tls://user:password@host:587); the console by default.
vars().update(env.email_url("EMAIL_URL", default="consolemail://"))
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="orders@partner.example")

# SECURITY
# ------------------------------------------------------------------------------
# The UI lives in the host's iframe: only HOST_ORIGINS may frame it (CSP
# frame-ancestors, set per embed view); every other page keeps X-Frame-Options DENY.
HOST_ORIGINS = env.list("HOST_ORIGINS", default=[PUBLIC_BASE_URL])
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
# The load balancers or proxies (addresses or networks) whose X-Forwarded-Proto and X-Forwarded-For
# are believed; from anyone else the headers are ignored (partner/core/middleware.py).
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])
if not DEBUG:
    # https://docs.djangoproject.com/en/5.2/ref/middleware/#http-strict-transport-security
    SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SECURE_REDIRECT_EXEMPT = [r"^healthz(/live|/ready)?$"]  # load balancers probe over plain HTTP
    if TRUSTED_PROXIES:
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    # The embedded page's CSRF cookie must cross into the host's iframe (SameSite=None requires
    # Secure); the session cookie is the admin's alone, which is never framed.
    SESSION_COOKIE_SAMESITE = "Lax"
    CSRF_COOKIE_SAMESITE = "None"
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# Secrets at rest (product signing secrets, credential values we send on) are
# encrypted with Fernet; several comma-separated keys allow rotation, newest first.
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS", default=[])
if not DEBUG and (not FIELD_ENCRYPTION_KEYS or _LOCAL_FIELD_ENCRYPTION_KEY in FIELD_ENCRYPTION_KEYS):
    raise ImproperlyConfigured(
        "FIELD_ENCRYPTION_KEYS is required when DJANGO_DEBUG is off, and must not hold the local runs' key "
        "(generate one with: "
        "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
    )
FIELD_ENCRYPTION_KEYS = FIELD_ENCRYPTION_KEYS or [_LOCAL_FIELD_ENCRYPTION_KEY]

# THE PARTNER (our company, as lenders see it)
# ------------------------------------------------------------------------------
# `respondingParty` of every response and the letterhead of the reports
# (partner/fulfillment/automated/fulfillers/base.py: partner_party). Public contact details only.
PARTNER_NAME = env.str("PARTNER_NAME", default="Keystone Property Data, Inc.")
PARTNER_ADDRESS = env.str("PARTNER_ADDRESS", default="100 Market Street, Suite 400")  # street line
PARTNER_CITY = env.str("PARTNER_CITY", default="San Francisco")
PARTNER_STATE = env.str("PARTNER_STATE", default="CA")
PARTNER_POSTAL_CODE = env.str("PARTNER_POSTAL_CODE", default="94105")
PARTNER_CONTACT_NAME = env.str("PARTNER_CONTACT_NAME", default="Fulfillment Desk")
PARTNER_CONTACT_ROLE = env.str("PARTNER_CONTACT_ROLE", default="Order Support")
PARTNER_PHONE = env.str("PARTNER_PHONE", default="415-555-0142")
PARTNER_FAX = env.str("PARTNER_FAX", default="415-555-0143")  # shown where a response carries one
PARTNER_EMAIL = env.str("PARTNER_EMAIL", default="orders@keystone-property-data.example")
# A PNG or JPEG drawn at the top left of the reports; none when empty (or unreadable: a warning is
# logged and the report goes out without it).
PARTNER_LOGO_PATH = env.str("PARTNER_LOGO_PATH", default="")

# THE SERVICE (the platform we integrate with)
# ------------------------------------------------------------------------------
# With DJANGO_DEBUG off the sandbox (whose host API hands out partner access tokens to anyone) is
# mounted only when the process environment asks: a SANDBOX_ENABLED=true from .env is a local run's
# and is ignored. `manage.py check --deploy` still fails while it is mounted (partner.E002).
SANDBOX_ENABLED = _read("SANDBOX_ENABLED", env.bool, default=DEBUG)
if not DEBUG and "SANDBOX_ENABLED" not in _PROCESS_ENVIRON:
    SANDBOX_ENABLED = False
# The sandbox's own knobs (see partner/sandbox/__init__.py): access token lifetime,
# webhook sender threads and attempts.
SANDBOX_TOKEN_LIFETIME = env.int("SANDBOX_TOKEN_LIFETIME", default=3600)
SANDBOX_WEBHOOK_WORKERS = env.int("SANDBOX_WEBHOOK_WORKERS", default=8)
SANDBOX_WEBHOOK_MAX_ATTEMPTS = env.int("SANDBOX_WEBHOOK_MAX_ATTEMPTS", default=6)
SVC_BASE_URL = env.str("SVC_BASE_URL", default=f"{PUBLIC_BASE_URL}/sandbox").rstrip("/")
SVC_TOKEN_URL = env.str("SVC_TOKEN_URL", default=f"{SVC_BASE_URL}/oauth2/v1/token")
# The sandbox's demo client and signing secret are the defaults of local runs only. With DJANGO_DEBUG
# off the client secret is required and no signing secret is the default: products may have their
# own only. (A demo SVC_CLIENT_ID alone grants nothing; `check --deploy` reports it, partner.E001.)
SVC_CLIENT_ID = env.str("SVC_CLIENT_ID", default=_SANDBOX_CLIENT_ID)
SVC_CLIENT_SECRET = env.str("SVC_CLIENT_SECRET", default=_SANDBOX_CLIENT_SECRET if DEBUG else "")
SVC_SCOPE = env.str("SVC_SCOPE", default="pc pcapi")
SVC_SIGNING_SECRETS = env.list("SVC_SIGNING_SECRETS", default=[_SANDBOX_SIGNING_SECRET] if DEBUG else [])
if not DEBUG:
    if not SVC_CLIENT_SECRET:
        raise ImproperlyConfigured("SVC_CLIENT_SECRET is required when DJANGO_DEBUG is off")
    if SVC_CLIENT_SECRET == _SANDBOX_CLIENT_SECRET:
        raise ImproperlyConfigured(
            "SVC_CLIENT_SECRET is the sandbox's public demo secret, refused when DJANGO_DEBUG is off"
        )
    if _SANDBOX_SIGNING_SECRET in SVC_SIGNING_SECRETS:
        raise ImproperlyConfigured(
            "SVC_SIGNING_SECRETS holds the sandbox's public demo secret, refused when DJANGO_DEBUG is off: "
            "anyone could sign a webhook for every product (leave it empty when each product has its own)"
        )
SVC_SIGNATURE_HEADER = env.str("SVC_SIGNATURE_HEADER", default="Svc-Signature")
SVC_PAT_HEADER = env.str("SVC_PAT_HEADER", default="X-Svc-PAT")
SVC_URN_PREFIX = env.str("SVC_URN_PREFIX", default="urn:svc")
# (connect, read) seconds for every call to the service.
SVC_TIMEOUT = (env.float("SVC_CONNECT_TIMEOUT", default=5.0), env.float("SVC_READ_TIMEOUT", default=30.0))
SVC_MAX_RETRIES = env.int("SVC_MAX_RETRIES", default=3)
# Transport retries (GET, PUT and harmless POST/PATCH): backoff doubled per attempt up to the
# maximum, with jitter; a Retry-After longer than SVC_RETRY_AFTER_MAX goes back to the task instead.
SVC_RETRY_BACKOFF = env.float("SVC_RETRY_BACKOFF", default=0.5)
SVC_RETRY_BACKOFF_MAX = env.float("SVC_RETRY_BACKOFF_MAX", default=8.0)
SVC_RETRY_AFTER_MAX = env.float("SVC_RETRY_AFTER_MAX", default=30.0)
# Where an upload slot's location may point (partner/platform/locations.py). Strict whenever
# DJANGO_DEBUG is off, with no variable to turn it off: https only, and only to public addresses.
# SVC_UPLOAD_HOSTS: the hosts allowed (`uploads.example.com`, or `.example.com` for a domain and its
# subdomains), in every mode; empty allows any host.
SVC_UPLOAD_LOCATION_STRICT = not DEBUG
SVC_UPLOAD_HOSTS = env.list("SVC_UPLOAD_HOSTS", default=[])

# Webhook intake: the largest body accepted on POST /v1/webhooks.
WEBHOOK_MAX_BYTES = env.int("WEBHOOK_MAX_BYTES", default=256 * 1024)


# RATE LIMITS
# ------------------------------------------------------------------------------
# https://django-ratelimit.readthedocs.io/en/stable/rates.html
# A rate is "count/period", the period s, m, h or d with an optional multiplier ("10/m", "100/5m").
# Counted in the default cache per client address (REMOTE_ADDR as TrustedProxyMiddleware leaves
# it), so the limits hold across processes only with a shared cache (Redis; partner.E005); beyond
# a limit the answer is 429 with Retry-After (partner/core/ratelimits.py).
def _rate(name: str, default: str) -> str:
    value = env.str(name, default=default).strip()
    count, _, period = value.partition("/")
    multiplier, unit = period[:-1] or "1", period[-1:]
    well_formed = count.isdecimal() and multiplier.isdecimal() and unit in ("s", "m", "h", "d")
    if not well_formed or int(count) == 0 or int(multiplier) == 0:
        raise ImproperlyConfigured(f"{name} must be a rate like 60/m (a count per s, m, h or d, e.g. 100/5m)")
    return value


# The embedded page's JSON reads that each cost the service a call with the lender's token (the origin
# proxy, an order's progress, the order check) share one count per address. A page polling its order
# takes 20 a minute: raise this when many lenders reach us from one address.
RATELIMIT_ORIGIN = _rate("RATELIMIT_ORIGIN", "120/m")
# The admin's sign-in: POSTs per address, and failed attempts per username tried.
RATELIMIT_ADMIN_LOGIN = _rate("RATELIMIT_ADMIN_LOGIN", "10/m")

# CELERY
# ------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
# The default broker of local runs (DJANGO_DEBUG on) is kombu's SQLAlchemy transport on one SQLite
# file, var/broker.sqlite3: no server, so `make run` works anywhere, and a worker never reads half a
# message (the filesystem transport's could, and the worker stopped: partner/core/brokers.py,
# bench/broker_local.py). With DJANGO_DEBUG off a broker that needs no server is refused at start:
# production sets CELERY_BROKER_URL=redis://... or amqp://... (`check --deploy` says it too, E003).
from partner.core import brokers as _brokers  # noqa: E402 - no Django import; kombu only when used

CELERY_BROKER_URL = env.str(
    "CELERY_BROKER_URL", default=_brokers.sqlite_broker_url(VAR_DIR / "broker.sqlite3") if DEBUG else ""
)
if not DEBUG and not CELERY_BROKER_URL:
    raise ImproperlyConfigured(
        "CELERY_BROKER_URL is required when DJANGO_DEBUG is off: redis://host:6379/0 or amqp://user:password@host//"
    )
if not DEBUG and _brokers.broker_url_serverless(CELERY_BROKER_URL):
    raise ImproperlyConfigured(
        "CELERY_BROKER_URL names a broker that needs no server (filesystem, memory or SQLite), refused when "
        "DJANGO_DEBUG is off: its queue is one machine's or one process's. Use redis://host:6379/0 or "
        "amqp://user:password@host//"
    )
_LOCAL_BROKER_FILE = _brokers.sqlite_broker_path(CELERY_BROKER_URL)
if _LOCAL_BROKER_FILE is not None:
    # No visibility timeout on this transport: the messages a worker held when it was killed
    # (SIGKILL; a normal stop gives them back) are not delivered again. The sweeps hand the stalled
    # notifications and orders to the broker again after STALL_SECONDS, as after any lost message.
    CELERY_BROKER_TRANSPORT_OPTIONS = _brokers.sqlite_broker_options(_LOCAL_BROKER_FILE)
    # Results (only `check_worker` waits for one) in a SQLite file of their own, beside it.
    _default_results = f"db+sqlite:///{_LOCAL_BROKER_FILE.with_name('celery-results.sqlite3')}"
    CELERY_DATABASE_ENGINE_OPTIONS = {"connect_args": {"timeout": _brokers.SQLITE_BUSY_TIMEOUT}}
    # The file, kombu's tables and Celery's default queue exist before web, worker and beat race to
    # create them (which would stop the worker that lost).
    _brokers.sqlite_broker_prepare(CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS, queue="celery")
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
# One message at a time per process: tasks wait on the service, not the CPU.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task stuck on the service is interrupted (soft) and then killed (hard).
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=120)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=150)
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
# Our logging configuration stays in charge of the root logger.
# Celery's Django fix-up closes every database connection before and after each task unless
# this is set: a new PostgreSQL connection (and backend process) per task. With it, a task's
# connections live like a request's: closed when older than DATABASE_CONN_MAX_AGE or unusable
# (config/celery.py), and by the fix-up after this many tasks.
CELERY_DB_REUSE_MAX = 1000
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# What a task prints (the console e-mail backend of local runs) is logged as INFO, not as a warning.
CELERY_WORKER_REDIRECT_STDOUTS_LEVEL = "INFO"
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The inbox relay in each worker hands stored notifications to the broker; it looks again after
# this many seconds when there was nothing to hand over (0: no relay, the sweep alone enqueues).
INBOX_RELAY_INTERVAL = env.float("INBOX_RELAY_INTERVAL", default=0.2)
# /healthz/ready is "degraded" when no relay round was seen for this long (0: not checked), or the
# inbox's backlog is past these many rows or its oldest row waited this long (partner/inbox/health.py).
INBOX_RELAY_STALE_SECONDS = env.int("INBOX_RELAY_STALE_SECONDS", default=60)
INBOX_BACKLOG_WARN_ROWS = env.int("INBOX_BACKLOG_WARN_ROWS", default=1000)
INBOX_BACKLOG_WARN_SECONDS = env.int("INBOX_BACKLOG_WARN_SECONDS", default=300)
# How often the periodic jobs run (seconds).
SWEEP_INTERVAL = env.int("SWEEP_INTERVAL", default=30)
RECONCILE_INTERVAL = env.int("RECONCILE_INTERVAL", default=300)
# The reconciliation's full pass (every page of the service's transaction list) runs at most this
# often, in the run of `fulfillment.reconcile` that finds it due (its time is kept in the database,
# so a restarted scheduler does not put it off); the other runs read only the list's end
# (partner/fulfillment/recovery/reconciliation.py). 0: every run reads every page.
RECONCILE_FULL_INTERVAL = env.int("RECONCILE_FULL_INTERVAL", default=86400)
# A notification or order left this long with no worker holding it had its message lost: the
# sweep hands it to the broker again (partner/core/leases.py).
STALL_SECONDS = env.int("STALL_SECONDS", default=120)
# A delivered order whose "processed" callback has not come after this long is shown as awaiting
# confirmation (admin filter, /healthz warning); the reconciliation completes it when the service's
# transaction list says it is completed, and staff can confirm it by hand.
CONFIRMATION_WAIT_SECONDS = env.int("CONFIRMATION_WAIT_SECONDS", default=900)
# A worker's hold on a notification or an order lasts this long unless renewed; it renews it every
# third of this while it works, so a dead worker's order is free again within this many seconds,
# and picked up by another worker within a third of it more (partner/core/leases.py).
LEASE_SECONDS = env.float("LEASE_SECONDS", default=15.0)
# RETENTION: borrowers' personal data is kept this many days, then purged by the daily task
# (`core.purge` below; `manage.py purge --dry-run` says what it would do): personal fields erased
# with the row kept, or whole rows deleted (partner/core/retention.py and each app's retention.py).
# Counted from when a row was finished (a notification processed, an order completed or failed);
# nothing of an open order is ever touched. 0 keeps that kind for ever.
RETENTION_NOTIFICATION_BODY_DAYS = _read("RETENTION_NOTIFICATION_BODY_DAYS", env.int, default=30)  # body, headers
RETENTION_NOTIFICATION_DAYS = _read("RETENTION_NOTIFICATION_DAYS", env.int, default=365)  # rows (dedupe keys)
RETENTION_ORDER_DATA_DAYS = _read("RETENTION_ORDER_DATA_DAYS", env.int, default=90)  # response, errors
RETENTION_DOCUMENT_DAYS = _read("RETENTION_DOCUMENT_DAYS", env.int, default=90)  # attachments' bytes (PDFs)
RETENTION_STEP_DAYS = _read("RETENTION_STEP_DAYS", env.int, default=365)  # an order's step rows
RETENTION_SANDBOX_DAYS = _read("RETENTION_SANDBOX_DAYS", env.int, default=7)  # the emulator's transactions etc.
CELERY_BEAT_SCHEDULE = {
    "inbox-sweep": {"task": "inbox.sweep", "schedule": SWEEP_INTERVAL},
    "orders-sweep": {"task": "fulfillment.sweep", "schedule": SWEEP_INTERVAL},
    # The cheap pass each time; the full pass in the run that finds RECONCILE_FULL_INTERVAL passed.
    "transactions-reconcile": {"task": "fulfillment.reconcile", "schedule": RECONCILE_INTERVAL},
    "products-pull": {"task": "catalog.pull", "schedule": RECONCILE_INTERVAL},
    "data-purge": {"task": "core.purge", "schedule": 24 * 60 * 60},  # once a day (RETENTION above)
    # Staff-worked orders past their due time: staff are told once (partner/fulfillment/staff/notices.py).
    "staff-overdue": {"task": "fulfillment.overdue", "schedule": 300},
}

# REST FRAMEWORK
# ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "partner.core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Partner application API",
    "DESCRIPTION": "Webhook receiver, origin proxy and transaction status of the partner application.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
}

# METRICS
# ------------------------------------------------------------------------------
# Prometheus figures at /metrics (partner/core/metrics.py). Every process of a host counts into
# one directory (the client library's multiprocess mode), emptied when the host's processes start.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics"))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR  # read by the library, before its first use
Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# Open to anyone in local runs only; in production a bearer token or the networks named open it.
METRICS_PUBLIC = DEBUG
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=[])
# A worker host without a web process serves its processes' figures on this port (0: not served).
WORKER_METRICS_PORT = env.int("WORKER_METRICS_PORT", default=0)

# LOGGING
# ------------------------------------------------------------------------------
# One line per event with the request id and the ids of the work at hand (notification, order,
# transaction: partner.core.logging.log_context); the redaction filter keeps secrets (client secret,
# signing secrets, passwords, tokens) out of every line. LOG_FORMAT=json writes one JSON object per
# line instead of text, for a log collector (gunicorn.conf.py follows it for gunicorn's own lines).
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOG_FORMAT = env.str("LOG_FORMAT", default="text").strip().lower() or "text"
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured("LOG_FORMAT must be text (the default) or json")
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
# secrets, credential headers and request bodies scrubbed (partner/core/error_reporting.py).
SENTRY_DSN = env.str("SENTRY_DSN", default="")
if SENTRY_DSN:
    from partner.core.error_reporting import error_reporting_init  # noqa: E402 - only with a DSN

    _SENTRY_TRACES_SAMPLE_RATE = _read("SENTRY_TRACES_SAMPLE_RATE", env.float, default=None)
    if _SENTRY_TRACES_SAMPLE_RATE is not None and not 0 <= _SENTRY_TRACES_SAMPLE_RATE <= 1:
        raise ImproperlyConfigured("SENTRY_TRACES_SAMPLE_RATE must be between 0 and 1")
    error_reporting_init(
        dsn=SENTRY_DSN,
        environment=env.str("SENTRY_ENVIRONMENT", default="") or None,
        traces_sample_rate=_SENTRY_TRACES_SAMPLE_RATE,
        secret_headers=[SVC_PAT_HEADER, SVC_SIGNATURE_HEADER],
    )
