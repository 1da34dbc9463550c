"""Django's own settings: the general ones, the database, the cache, the apps, the middleware, the
templates, passwords and static files."""

from .environment import BASE_DIR, VAR_DIR, env, env_read, setting_refused

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
    elif env.bool("DATABASE_SERVER_SIDE_BINDING", default=True):
        # psycopg 3 sends the parameters apart from the statement (the extended protocol's unnamed
        # statement) instead of quoting each into its text in Python: less CPU per statement
        # (docs/performance.md, "Server-side binding"). No named prepared statement is made
        # (Django's prepare_threshold stays None), so a pooler in transaction mode needs nothing
        # more; DATABASE_SERVER_SIDE_BINDING=false turns it off (docs/deployment.md).
        config.setdefault("OPTIONS", {})["server_side_binding"] = True
        # Named prepared statements: psycopg prepares a statement once it ran this many times on a
        # connection, and then sends only its name and values (psycopg never prepares a statement it
        # binds on the client). Off by default: PgBouncer in transaction mode breaks with them below
        # 1.21, and needs max_prepared_statements from 1.21 on (docs/deployment.md).
        threshold = env.str("DATABASE_PREPARE_THRESHOLD", default="").strip()
        if threshold:
            if not threshold.isdecimal():
                why = "must be a whole number of executions (0: at the first), or empty for never"
                threshold = setting_refused("DATABASE_PREPARE_THRESHOLD", why, "")
            config["OPTIONS"]["prepare_threshold"] = int(threshold) if threshold else None
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
if CACHES["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache":
    # Django's, with its redis-py client made once rather than per operation (partner/core/cache.py).
    CACHES["default"]["BACKEND"] = "partner.core.cache.RedisCache"

# APPS
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#installed-apps
# The sandbox (partner.sandbox) is not here: config/settings/local.py and test.py add it, production
# only when its process environment asks (SANDBOX_ENABLED: config/settings/sandbox.py).
INSTALLED_APPS = [
    # First: its ready() prepares the metrics folder before any other app's ready() (the admin's
    # autodiscovery) imports a module that counts (partner/core/apps.py).
    "partner.core",
    # The service's client: no models; its ready() connects the metrics to the transport's signals.
    "partner.platform",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Django's own form templates, for the `jinja2` engine of TEMPLATES (the staff's forms' renderer).
    "django.forms",
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
    # Errors made outside a view (the 413 below, 500s) in the error shape its path's view declares.
    "partner.core.api.ErrorShapeMiddleware",
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
    {
        # The pages drawn with Jinja2 (in `jinja2/` of their app): the staff's order page's body, which
        # Jinja2 draws in less than half the CPU (docs/performance.md, "The web side, third round").
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "NAME": "jinja2",
        "APP_DIRS": True,
        "OPTIONS": {"environment": "partner.core.templating.environment"},
    },
]

# SESSIONS
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#session-engine
# The admin's sessions are kept in the database and read through the shared cache: a staff page reads
# its session from the cache instead of a query (docs/performance.md, "What a staff delivery costs").
# A cache that does not answer is skipped on reading (the database's copy is read).
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"

# AUTHENTICATION
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#authentication-backends
# Django's model backend, each staff member's permissions kept in the shared cache between requests
# (two queries less on every admin request; partner/core/permission_cache.py). A session signed in
# through another backend path (Django's own, before this one) is signed out once.
AUTHENTICATION_BACKENDS = ["partner.core.permission_cache.CachedPermissionsBackend"]
# A permission changed outside Django's signals (SQL, a restored database) is seen within these seconds.
PERMISSIONS_CACHE_SECONDS = env.int("PERMISSIONS_CACHE_SECONDS", default=60)

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
# secrets' keyed hash (CLIENT_SECRET_HASHER in connector.py; why in partner/connector/oauth.py).
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

# partner.catalog: products, credential definitions, partner accounts
# ------------------------------------------------------------------------------
# partner/catalog/__init__.py
# Every order reads the catalog (products, credential definitions) from the cache: a change drops it
# at once; these seconds bound a copy that a change made outside Django (SQL, a restore) left behind.
CATALOG_CACHE_SECONDS = env.int("CATALOG_CACHE_SECONDS", default=300)
