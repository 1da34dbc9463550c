"""The production preflight: `manage.py check --deploy` fails on what must never ship.

Deployment checks only (`register(..., deploy=True)`), so `make run` and `make test` (SQLite, the
local SQLite broker, a file cache, the sandbox) are untouched; registered by `CoreConfig.ready`.

- partner.E001: a demo secret or credential (the sandbox's client and signing secret, the local
  runs' secret key and field encryption key). The production settings refuse most of them at
  start-up; this also catches a settings module of a deployment's own that sets them.
- partner.E002: the sandbox is mounted (its host API hands out partner access tokens to anyone).
- partner.E003: a broker that needs no server (filesystem, memory, SQLAlchemy over SQLite): each
  process or machine would have its own queue. The production settings refuse it at start-up (the
  same test, `partner/core/brokers.py`); this also catches a settings module of a deployment's own
  that sets it.
- partner.E004: SQLite.
- partner.E005: a per-process or file cache: the service token and its lock must be shared.
- partner.E006 / E007: HOST_ORIGINS / PUBLIC_BASE_URL not https.
"""

from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, register

from partner.core.brokers import broker_url_serverless
from partner.core.demo_values import (
    LOCAL_FIELD_ENCRYPTION_KEY,
    LOCAL_SECRET_KEY,
    SANDBOX_CLIENT_ID,
    SANDBOX_CLIENT_SECRET,
    SANDBOX_SIGNING_SECRET,
)

# Cache backends that are per process (locmem), per machine (file) or none at all (dummy).
UNSHARED_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.filebased.FileBasedCache",
    "django.core.cache.backends.dummy.DummyCache",
)


def _demo_values():
    """(variable, whether it holds a demo value) for every secret or credential with a public value."""
    return [
        ("DJANGO_SECRET_KEY", settings.SECRET_KEY == LOCAL_SECRET_KEY),
        ("FIELD_ENCRYPTION_KEYS", LOCAL_FIELD_ENCRYPTION_KEY in settings.FIELD_ENCRYPTION_KEYS),
        ("SVC_CLIENT_ID", settings.SVC_CLIENT_ID == SANDBOX_CLIENT_ID),
        ("SVC_CLIENT_SECRET", settings.SVC_CLIENT_SECRET == SANDBOX_CLIENT_SECRET),
        ("SVC_SIGNING_SECRETS", SANDBOX_SIGNING_SECRET in settings.SVC_SIGNING_SECRETS),
    ]


@register(deploy=True)
def demo_values_check(app_configs=None, **kwargs):
    """partner.E001: one error per variable still holding a demo value (named, never echoed)."""
    return [
        Error(
            f"{name} holds a public demo value of the sandbox or of local runs.",
            hint=f"Set {name} to this deployment's own value (see .env.example).",
            id="partner.E001",
        )
        for name, is_demo in _demo_values()
        if is_demo
    ]


@register(deploy=True)
def sandbox_check(app_configs=None, **kwargs):
    """partner.E002: the service emulator is mounted at /sandbox/."""
    if not settings.SANDBOX_ENABLED:
        return []
    return [
        Error(
            "The sandbox is mounted at /sandbox/ (SANDBOX_ENABLED): its unauthenticated host API hands out "
            "partner access tokens for any lender.",
            hint="Unset SANDBOX_ENABLED in the process environment of production.",
            id="partner.E002",
        )
    ]


@register(deploy=True)
def broker_check(app_configs=None, **kwargs):
    """partner.E003: a broker URL (or one of its failover URLs) that needs no server."""
    if not broker_url_serverless(settings.CELERY_BROKER_URL):
        return []
    return [
        Error(
            "CELERY_BROKER_URL names a broker that needs no server (filesystem, memory or SQLite): "
            "web and worker processes on other machines would not share its queue.",
            hint="Set CELERY_BROKER_URL=redis://... or amqp://...",
            id="partner.E003",
        )
    ]


@register(deploy=True)
def database_check(app_configs=None, **kwargs):
    """partner.E004: a database on SQLite."""
    aliases = [alias for alias, config in settings.DATABASES.items() if "sqlite" in config.get("ENGINE", "")]
    if not aliases:
        return []
    return [
        Error(
            f"DATABASE_URL is SQLite (database {', '.join(aliases)}): one file, one writer at a time, one machine.",
            hint="Set DATABASE_URL=postgres://user:password@host:5432/name",
            id="partner.E004",
        )
    ]


@register(deploy=True)
def cache_check(app_configs=None, **kwargs):
    """partner.E005: the default cache is per process or per machine: the service token and the lock
    that fetches it (partner/platform/tokens.py) must be shared by every web and worker process."""
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    if backend not in UNSHARED_CACHES:
        return []
    return [
        Error(
            f"CACHE_URL is a cache not shared between processes and machines ({backend.rsplit('.', 1)[-1]}): "
            "each would fetch its own service token, without a common lock.",
            hint="Set CACHE_URL=redis://host:6379/1",
            id="partner.E005",
        )
    ]


def _https(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" and bool(parts.netloc)


@register(deploy=True)
def addresses_check(app_configs=None, **kwargs):
    """partner.E006 and E007: the host origins and our public address must be https."""
    errors = []
    plain = [origin for origin in settings.HOST_ORIGINS if not _https(origin)]
    if plain or not settings.HOST_ORIGINS:
        errors.append(
            Error(
                f"HOST_ORIGINS must be https origins: {', '.join(plain) or 'none given'}.",
                hint="Set HOST_ORIGINS=https://<the host application origin> (comma-separated).",
                id="partner.E006",
            )
        )
    if not _https(settings.PUBLIC_BASE_URL):
        errors.append(
            Error(
                f"PUBLIC_BASE_URL must be https: {settings.PUBLIC_BASE_URL or 'not given'}.",
                hint="Set PUBLIC_BASE_URL=https://<this deployment's address>; products pushed to the "
                "service point their interface and webhook URLs here.",
                id="partner.E007",
            )
        )
    return errors
