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
- partner.E008: a setting a deployment must give is missing (the secret key, the allowed hosts, the
  field encryption keys, the client secret, the broker, an S3 bucket).
- partner.E009: a weak secret: short, too few distinct characters, repeated words or a sequence (the secret key,
  the signing secrets, the metrics token, the client secret). A guessed secret key mints panel
  sessions for any lender; a guessed signing secret signs webhooks.
- partner.E010: FIELD_ENCRYPTION_KEYS holds a value that is not a Fernet key (every webhook would
  fail when it reads the products' secrets).
- partner.E011: an address of the service on plain http with DJANGO_DEBUG off: the client secret,
  access tokens and lenders' partner access tokens would travel in clear. Loopback only where the
  sandbox is mounted or a test's settings module runs against an emulator on this machine.
- partner.E012: a value that opens everything: DJANGO_ALLOWED_HOSTS=*, TRUSTED_PROXIES or
  METRICS_ALLOWED_NETWORKS of a /0 network or of a public one wider than /8 (IPv6: /32).
- partner.E013: the demo company (PARTNER_* unset) or an empty one on every report and response, and
  its phone and e-mail in the lender's panel.
- partner.E014: staff e-mail going nowhere (EMAIL_URL unset: the console backend).
- partner.E015: documents other processes cannot read: on a disk (DOCUMENT_STORAGE=filesystem)
  without DOCUMENTS_SINGLE_HOST=true saying that every web and worker process reads the same
  MEDIA_ROOT, or on a disk at all on Kubernetes (each pod has its own: S3 there).
- partner.E016: a protection turned off or a bound made useless: HSTS or the HTTPS redirect off, an
  http CSRF origin, API tokens living more than a day, a send timeout past 30 s, a token-endpoint
  rate past 300 a minute.

The production settings load whatever is missing, so that one `check --deploy` lists every problem
with its hint. Servers still refuse to start: `config/wsgi.py`, `config/asgi.py` and the Celery
worker and scheduler (`config/celery.py`) call `preflight_at_start` (PREFLIGHT_AT_START, on in
production), which raises one ImproperlyConfigured listing every error of the checks tagged
`start` (those above that make the application unsafe or broken at once: E001, E003, E008-E011,
E013 and E015).
"""

import ipaddress
import math
from collections import Counter
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import ERROR, Error, register, run_checks
from django.core.exceptions import ImproperlyConfigured

from partner.core.brokers import broker_url_serverless
from partner.core.demo_values import (
    DEMO_PARTNER,
    LOCAL_FIELD_ENCRYPTION_KEY,
    LOCAL_SECRET_KEY,
    SANDBOX_CLIENT_ID,
    SANDBOX_CLIENT_SECRET,
    SANDBOX_SIGNING_SECRET,
)
from partner.core.encryption import keys_malformed

# The tag of the checks a server runs when it starts (preflight_at_start), besides `check --deploy`.
START = "start"

# Cache backends that are per process (locmem), per machine (file) or none at all (dummy).
UNSHARED_CACHES = (
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.filebased.FileBasedCache",
    "django.core.cache.backends.dummy.DummyCache",
)


def _demo_values():
    """(variable, whether it holds a demo value) for every secret with a public value."""
    return [
        ("DJANGO_SECRET_KEY", _secret_key() == LOCAL_SECRET_KEY),
        ("FIELD_ENCRYPTION_KEYS", LOCAL_FIELD_ENCRYPTION_KEY in settings.FIELD_ENCRYPTION_KEYS),
        ("SVC_CLIENT_SECRET", settings.SVC_CLIENT_SECRET == SANDBOX_CLIENT_SECRET),
        ("SVC_SIGNING_SECRETS", SANDBOX_SIGNING_SECRET in settings.SVC_SIGNING_SECRETS),
    ]


def _secret_key() -> str:
    """SECRET_KEY without Django's refusal to read an empty one (reported by required_check)."""
    try:
        return settings.SECRET_KEY
    except ImproperlyConfigured:
        return ""


@register(START, deploy=True)
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
def demo_client_id_check(app_configs=None, **kwargs):
    """partner.E001 too, for the sandbox's client id: it grants nothing without its secret, so it fails
    the preflight but does not stop a start (local tests of production settings use it)."""
    if settings.SVC_CLIENT_ID != SANDBOX_CLIENT_ID:
        return []
    return [
        Error(
            "SVC_CLIENT_ID holds a public demo value of the sandbox or of local runs.",
            hint="Set SVC_CLIENT_ID to this deployment's own value (see .env.example).",
            id="partner.E001",
        )
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


@register(START, deploy=True)
def broker_check(app_configs=None, **kwargs):
    """partner.E003: a broker URL (or one of its failover URLs) that needs no server."""
    if not settings.CELERY_BROKER_URL or not broker_url_serverless(settings.CELERY_BROKER_URL):
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


def _required():
    """(variable, hint) of every setting a deployment must give that it left empty."""
    return [
        (name, hint)
        for name, missing, hint in [
            (
                "DJANGO_SECRET_KEY",
                not _secret_key(),
                "Generate one with: python -c 'import secrets; print(secrets.token_urlsafe(50))'",
            ),
            ("DJANGO_ALLOWED_HOSTS", not settings.ALLOWED_HOSTS, "Set the host names this deployment answers to."),
            (
                "FIELD_ENCRYPTION_KEYS",
                not settings.FIELD_ENCRYPTION_KEYS,
                "Generate one with: python -c "
                "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'",
            ),
            ("SVC_CLIENT_SECRET", not settings.SVC_CLIENT_SECRET, "Set the client secret the service gave us."),
            (
                "CELERY_BROKER_URL",
                not settings.CELERY_BROKER_URL,
                "Set CELERY_BROKER_URL=redis://host:6379/0 or amqp://user:password@host//",
            ),
            (
                "DOCUMENTS_S3_BUCKET",
                settings.DOCUMENT_STORAGE == "s3" and not settings.STORAGES["default"]["OPTIONS"].get("bucket_name"),
                "DOCUMENT_STORAGE=s3 needs the bucket's name.",
            ),
        ]
        if missing
    ]


@register(START, deploy=True)
def required_check(app_configs=None, **kwargs):
    """partner.E008: one error per required setting left empty."""
    return [
        Error(f"{name} is required in production.", hint=f"{hint} (see .env.example)", id="partner.E008")
        for name, hint in _required()
    ]


# A secret we rely on: at least this many characters, and an estimate of at least this many bits
# (its length times the Shannon entropy of its characters): `secrets.token_urlsafe(32)` has ~190.
SECRET_MIN_LENGTH = 16
SECRET_KEY_MIN_LENGTH = 50  # Django's own rule for SECRET_KEY (security.W009)
SECRET_MIN_BITS = 64


REPEAT_GRAM = 4  # a character ending a run of this many seen earlier in the value adds nothing


def _unpredictable(value: str) -> int:
    """How many characters of `value` a guesser could not read off what comes before them: not the
    next step of a sequence (`abc`, `123`, `zyx`: the same step of at most 1 as the two before), nor
    the end of a run of REPEAT_GRAM characters that already occurred (`changeme-changeme-`)."""
    count = 0
    for i, character in enumerate(value):
        if i >= 2:
            step = ord(character) - ord(value[i - 1])
            if abs(step) <= 1 and step == ord(value[i - 1]) - ord(value[i - 2]):
                continue
        if i >= REPEAT_GRAM - 1 and value[i - REPEAT_GRAM + 1 : i + 1] in value[:i]:
            continue
        count += 1
    return count


def secret_weakness(value: str, *, min_length: int = SECRET_MIN_LENGTH) -> str | None:
    """Why a secret is weak (never echoing it), or None. Generated values always pass; a word,
    a repeated character, repeated words, a sequence (the alphabet, digits in order) or a short
    value never does, whatever its length: only the characters a guesser cannot read off those
    before them count towards SECRET_MIN_BITS."""
    if len(value) < min_length:
        return f"shorter than {min_length} characters"
    counts = Counter(value)
    per_character = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    if len(counts) < 8 or per_character * len(value) < SECRET_MIN_BITS:
        return "too few distinct characters to be random"
    if per_character * _unpredictable(value) < SECRET_MIN_BITS:
        return "repeated words or a sequence, not random"
    return None


def _secrets():
    """(variable, value, minimum length) of every secret we rely on that is set (missing: E008)."""
    values = [("DJANGO_SECRET_KEY", _secret_key(), SECRET_KEY_MIN_LENGTH)]
    values += [("DJANGO_SECRET_KEY_FALLBACKS", key, SECRET_KEY_MIN_LENGTH) for key in settings.SECRET_KEY_FALLBACKS]
    values += [("SVC_SIGNING_SECRETS", secret, SECRET_MIN_LENGTH) for secret in settings.SVC_SIGNING_SECRETS]
    values += [("METRICS_TOKEN", settings.METRICS_TOKEN, SECRET_MIN_LENGTH)]
    values += [("SVC_CLIENT_SECRET", settings.SVC_CLIENT_SECRET, SECRET_MIN_LENGTH)]
    return [(name, value, length) for name, value, length in values if value]


@register(START, deploy=True)
def secrets_strength_check(app_configs=None, **kwargs):
    """partner.E009: a secret we rely on that is short or not random (named, never echoed)."""
    errors = []
    for name, value, length in _secrets():
        weakness = secret_weakness(value, min_length=length)
        if weakness:
            errors.append(
                Error(
                    f"{name} holds a weak value ({weakness}).",
                    hint="Ask the service for a new client secret."
                    if name == "SVC_CLIENT_SECRET"
                    else f"Generate one with: python -c 'import secrets; print(secrets.token_urlsafe({length}))'",
                    id="partner.E009",
                )
            )
    return errors


@register(START, deploy=True)
def encryption_keys_check(app_configs=None, **kwargs):
    """partner.E010: a value of FIELD_ENCRYPTION_KEYS that is not a Fernet key (its position, never it)."""
    positions = keys_malformed(settings.FIELD_ENCRYPTION_KEYS)
    if not positions:
        return []
    return [
        Error(
            "FIELD_ENCRYPTION_KEYS holds a value that is not a Fernet key "
            f"(position {', '.join(map(str, positions))}): every stored secret, and so every webhook, would fail.",
            hint="Each key is 32 url-safe base64 bytes: python -c "
            "'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'",
            id="partner.E010",
        )
    ]


def url_on_loopback(url: str) -> bool:
    """The address is this machine's own (localhost or a loopback IP): the one place that says so."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _emulator_allowed(url: str) -> bool:
    return (settings.SANDBOX_ENABLED and url_on_loopback(url)) or not settings.SVC_UPLOAD_LOCATION_STRICT


def service_addresses() -> list[tuple[str, str]]:
    """(variable, address) of every address of the service we send a credential to."""
    return [("SVC_BASE_URL", settings.SVC_BASE_URL), ("SVC_TOKEN_URL", settings.SVC_TOKEN_URL)]


@register(START, deploy=True)
def service_addresses_check(app_configs=None, **kwargs):
    """partner.E011: with DJANGO_DEBUG off, an address of the service that is not https. http only
    for a run against an emulator: loopback where the sandbox is mounted, or any address where a
    settings module of a test or benchmark turned SVC_UPLOAD_LOCATION_STRICT off (no variable of
    the environment can: tests/deploy/image_settings, bench/harness/settings.py)."""
    if settings.DEBUG:
        return []
    return [
        Error(
            f"{name} must be https with DJANGO_DEBUG off: the client secret and every token sent to it "
            "would travel in clear.",
            hint=f"Set {name}=https://<the service's address>.",
            id="partner.E011",
        )
        for name, url in service_addresses()
        if not _https(url) and not _emulator_allowed(url)
    ]


# A network wider than this that is not private is "everyone" in effect (`0.0.0.0/1` is half of it).
WIDEST_PUBLIC_PREFIX = {4: 8, 6: 32}


def _networks_everyone(values) -> bool:
    for value in values:
        try:
            network = ipaddress.ip_network(value, strict=False)
        except ValueError:
            continue  # malformed: refused where it is read
        if network.prefixlen == 0 or (
            not network.is_private and network.prefixlen < WIDEST_PUBLIC_PREFIX[network.version]
        ):
            return True
    return False


@register(deploy=True)
def permissive_values_check(app_configs=None, **kwargs):
    """partner.E012: a value that opens what it is meant to close."""
    found = [
        (
            "DJANGO_ALLOWED_HOSTS",
            "*" in settings.ALLOWED_HOSTS,
            "any Host header is accepted (password-reset links, cache poisoning)",
            "Name this deployment's host names.",
        ),
        (
            "TRUSTED_PROXIES",
            _networks_everyone(settings.TRUSTED_PROXIES),
            "every client's X-Forwarded-For and X-Forwarded-Proto are believed (per-address limits bypassed)",
            "Name the load balancers' addresses or network only.",
        ),
        (
            "METRICS_ALLOWED_NETWORKS",
            _networks_everyone(settings.METRICS_ALLOWED_NETWORKS),
            "/metrics and /api/schema/ are open to every address",
            "Name the scrapers' network, or use METRICS_TOKEN alone.",
        ),
    ]
    return [
        Error(f"{name} opens everything: {why}.", hint=hint, id="partner.E012")
        for name, permissive, why, hint in found
        if permissive
    ]


# What names the demo company: a city or a ZIP code alone may be a real company's too.
_DEMO_COMPANY_FIELDS = ("PARTNER_NAME", "PARTNER_ADDRESS", "PARTNER_PHONE", "PARTNER_EMAIL")
_COMPANY_HINT = (
    "Set PARTNER_NAME, PARTNER_ADDRESS, PARTNER_CITY, PARTNER_STATE, PARTNER_POSTAL_CODE, PARTNER_PHONE and "
    "PARTNER_EMAIL (and PARTNER_CONTACT_NAME, PARTNER_CONTACT_ROLE, PARTNER_FAX as you wish) to our company's "
    "(see .env.example)."
)


@register(START, deploy=True)
def partner_company_check(app_configs=None, **kwargs):
    """partner.E013: PARTNER_* still the demo company, or left empty: on every report and response, and
    the contact lenders read in the panel."""
    ours = {
        "PARTNER_NAME": settings.PARTNER_NAME,
        "PARTNER_ADDRESS": settings.PARTNER_ADDRESS,
        "PARTNER_CITY": settings.PARTNER_CITY,
        "PARTNER_STATE": settings.PARTNER_STATE,
        "PARTNER_POSTAL_CODE": settings.PARTNER_POSTAL_CODE,
        "PARTNER_PHONE": settings.PARTNER_PHONE,
        "PARTNER_EMAIL": settings.PARTNER_EMAIL,
    }
    demo = [name for name in _DEMO_COMPANY_FIELDS if ours[name] == DEMO_PARTNER[name]]
    empty = [name for name in ours if not str(ours[name]).strip()]
    errors = []
    if demo:
        errors.append(
            Error(
                f"{', '.join(demo)} still hold the demo company's values: lenders would see them on every "
                "report and response, and call or write to them from the panel.",
                hint=_COMPANY_HINT,
                id="partner.E013",
            )
        )
    if empty:
        errors.append(
            Error(
                f"{', '.join(empty)} are empty: every response names our company (respondingParty) with them.",
                hint=_COMPANY_HINT,
                id="partner.E013",
            )
        )
    return errors


# E-mail backends that send nothing anywhere a person reads.
UNSENT_EMAIL = (
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.locmem.EmailBackend",
    "django.core.mail.backends.dummy.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
)


@register(deploy=True)
def email_check(app_configs=None, **kwargs):
    """partner.E014: staff e-mail (new orders, orders past due) sent nowhere."""
    if settings.EMAIL_BACKEND not in UNSENT_EMAIL:
        return []
    return [
        Error(
            "EMAIL_URL is not set (or names the console, memory or a file): staff would never hear of a new "
            "staff-worked order or of one past its due time.",
            hint="Set EMAIL_URL=smtp+tls://user:password@host:587",
            id="partner.E014",
        )
    ]


@register(START, deploy=True)
def document_storage_check(app_configs=None, **kwargs):
    """partner.E015: documents on a disk that other web and worker processes may not read."""
    if settings.DOCUMENT_STORAGE != "filesystem":
        return []
    if settings.ON_KUBERNETES:
        return [
            Error(
                "DOCUMENT_STORAGE is filesystem on Kubernetes: each pod writes to a disk of its own, so a document "
                "uploaded through a web pod (by staff or the API) is not on the worker pod that sends it.",
                hint="Set DOCUMENT_STORAGE=s3 and DOCUMENTS_S3_BUCKET (with DOCUMENTS_S3_REGION, or "
                "DOCUMENTS_S3_ENDPOINT_URL for an S3-compatible store; the keys in the Secret, or the pod's role).",
                id="partner.E015",
            )
        ]
    if settings.DOCUMENTS_SINGLE_HOST:
        return []
    return [
        Error(
            "DOCUMENT_STORAGE is filesystem: a document is written to the disk of the process that received it, "
            "and a web or worker process that does not mount the same MEDIA_ROOT cannot read it.",
            hint="Set DOCUMENT_STORAGE=s3 and DOCUMENTS_S3_BUCKET; or, only when every web and worker process "
            "reads the same MEDIA_ROOT (one machine without containers, or compose's shared `documents` "
            "volume), DOCUMENTS_SINGLE_HOST=true. A container's own /app/var is not shared.",
            id="partner.E015",
        )
    ]


def preflight_at_start() -> None:
    """Refuse to start a server (PREFLIGHT_AT_START) on any error of the `start` checks, all of them
    listed in one ImproperlyConfigured; names and hints only, never a value."""
    if not settings.PREFLIGHT_AT_START:
        return
    errors = [m for m in run_checks(tags=[START], include_deployment_checks=True) if m.level >= ERROR]
    if errors:
        lines = "\n".join(f"  {m.id}: {m.msg} HINT: {m.hint}" for m in errors)
        raise ImproperlyConfigured(
            f"Refusing to start: {len(errors)} setting(s) to fix (`manage.py check --deploy` lists "
            f"every problem):\n{lines}"
        )


# Bounds past which a value no longer protects (partner.E016).
TOKEN_SECONDS_MAX = 86400  # an API access token: a day at most (a stolen one is good that long)
SEND_TIMEOUT_MAX = 30.0  # an event's send: a slow endpoint holds a worker that long
TOKEN_RATE_MAX_PER_MINUTE = 300  # the token endpoint per address: a guesser's pace
_RATE_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _per_minute(rate: str) -> float:
    count, _, period = rate.partition("/")
    multiplier, unit = period[:-1] or "1", period[-1:]
    return int(count) * 60 / (int(multiplier) * _RATE_UNIT_SECONDS[unit])


@register(deploy=True)
def unsafe_values_check(app_configs=None, **kwargs):
    """partner.E016: a protection turned off, or a bound set so far it no longer bounds anything."""
    token_seconds = settings.OAUTH2_PROVIDER.get("ACCESS_TOKEN_EXPIRE_SECONDS", 0)
    found = [
        (
            "DJANGO_SECURE_HSTS_SECONDS",
            settings.SECURE_HSTS_SECONDS <= 0,
            "HSTS is off: a browser may be sent to plain http and have the admin's session taken",
            "Leave it unset (a year), or at least a day while trying HTTPS out.",
        ),
        (
            "DJANGO_SECURE_SSL_REDIRECT",
            not settings.SECURE_SSL_REDIRECT,
            "plain http is answered, not redirected to https",
            "Leave it unset (true); the health endpoints stay reachable over http.",
        ),
        (
            "DJANGO_CSRF_TRUSTED_ORIGINS",
            any(urlsplit(origin).scheme != "https" for origin in settings.CSRF_TRUSTED_ORIGINS),
            "an origin that is not https is trusted with the admin's forms",
            "Name https origins only.",
        ),
        (
            "CONNECTOR_TOKEN_SECONDS",
            token_seconds > TOKEN_SECONDS_MAX,
            f"an API access token lives more than {TOKEN_SECONDS_MAX} s (a stolen one is good that long)",
            "Leave it unset (an hour); systems ask for a new token when theirs runs out.",
        ),
        (
            "CONNECTOR_SEND_TIMEOUT",
            settings.CONNECTOR_SEND_TIMEOUT > SEND_TIMEOUT_MAX,
            f"an event's send may hold a worker more than {SEND_TIMEOUT_MAX:g} s",
            "Leave it unset (5 s).",
        ),
        (
            "RATELIMIT_API_TOKEN",
            _per_minute(settings.RATELIMIT_API_TOKEN) > TOKEN_RATE_MAX_PER_MINUTE,
            f"the token endpoint takes more than {TOKEN_RATE_MAX_PER_MINUTE} tries a minute per address "
            "(client secrets guessed that fast)",
            "Leave it unset (30/m).",
        ),
    ]
    return [
        Error(f"{name} is unsafe: {why}.", hint=hint, id="partner.E016") for name, unsafe, why, hint in found if unsafe
    ]
