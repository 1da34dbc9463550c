"""Logging filters: the request id on every line, and no secret in any line.

`RedactSecretsFilter` masks two kinds of secret before a record is written:
the values we know are secret (client secret, signing secrets, the Django
secret key, encryption keys, database password, and anything registered at
run time with `secret_register`, such as access tokens and product signing
secrets) and anything that looks like `password=...`, `"token": "..."` or
`Bearer ...`, whatever its value.
"""

import contextvars
import logging
import re
import threading
from collections import OrderedDict

from django.views.debug import SafeExceptionReporterFilter

MASK = "********"

request_id_var = contextvars.ContextVar("request_id", default="-")

# Names of secrets, not secrets.
_SECRET_KEYS = r"(?:client_secret|secret|password|passwd|pwd|token|access_token|authorization|signature" + (  # noqa: S105
    r"|api_key|apikey|pat|x-svc-pat|svc-signature)"
)
_KEY_VALUE = re.compile(
    rf"""(?P<key>["']?[\w-]*{_SECRET_KEYS}["']?\s*[:=]\s*)(?P<quote>["']?)(?P<value>(?:Bearer\s+)?[^\s"',&}}\]]+)""",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<key>Bearer\s+)(?P<value>[A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE)

_registered = OrderedDict()
_registered_lock = threading.Lock()
_REGISTERED_MAX = 2000  # access tokens come and go; keep the newest ones


def secret_register(value):
    """Mask `value` in every later log line (for secrets learnt at run time)."""
    if not value or len(str(value)) < 6:  # too short to mask without masking ordinary words
        return
    with _registered_lock:
        _registered[str(value)] = None
        _registered.move_to_end(str(value))
        while len(_registered) > _REGISTERED_MAX:
            _registered.popitem(last=False)


def secrets_registered_clear():
    """Forget the secrets registered at run time (tests: one test's values must not mask the next's text)."""
    with _registered_lock:
        _registered.clear()


def _configured_secrets():
    from django.conf import settings

    values = [settings.SECRET_KEY, getattr(settings, "SVC_CLIENT_SECRET", "")]
    values += list(getattr(settings, "SVC_SIGNING_SECRETS", []))
    values += list(getattr(settings, "FIELD_ENCRYPTION_KEYS", []))
    values += [db.get("PASSWORD", "") for db in settings.DATABASES.values()]
    return [v for v in values if v and len(v) >= 6]


def redact(text):
    """Return `text` with every known secret value and every secret-looking pair masked."""
    if not text:
        return text
    try:
        known = _configured_secrets()
    except Exception:  # settings not configured yet: mask what we can
        known = []
    with _registered_lock:
        known += list(_registered)
    for value in sorted(known, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    text = _KEY_VALUE.sub(lambda m: f"{m['key']}{m['quote']}{MASK}", text)
    return _BEARER.sub(lambda m: f"{m['key']}{MASK}", text)


class RequestIdFilter(logging.Filter):
    """Put the current request (or task) id on the record as `request_id`."""

    def filter(self, record):
        record.request_id = request_id_var.get()
        return True


class RedactSecretsFilter(logging.Filter):
    """Mask secrets in the message, its arguments and its traceback."""

    _formatter = logging.Formatter()

    def filter(self, record):
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: keep the raw template
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


# Control characters (C0, DEL, C1) and the Unicode line and paragraph separators: none is written raw.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_NAMES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _control_escape(match) -> str:
    character = match.group()
    if character in _CONTROL_NAMES:
        return _CONTROL_NAMES[character]
    code = ord(character)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def control_characters_escape(text: str) -> str:
    """`text` with every control character written as an escape (`\\n`, `\\x1b`, `\\u2028`)."""
    return _CONTROL.sub(_control_escape, text)


class OneLineFormatter(logging.Formatter):
    """One line per event, and no control character in it: each is written as an escape (`\\n`, `\\x00`).

    A log collector then keeps an event (with its traceback) together, text from a request
    cannot start a line of its own that looks like another event (nor cut one with a NUL or
    a NEL), and no escape sequence reaches a terminal that shows the log.
    """

    def format(self, record):
        return control_characters_escape(super().format(record))


class SecretsExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's error reports, also hiding URLs with credentials, PATs and auth headers."""

    hidden_settings = re.compile("API|TOKEN|KEY|SECRET|PASS|SIGNATURE|AUTH|PAT|URL|DSN|COOKIE", flags=re.IGNORECASE)

    def get_safe_request_meta(self, request):
        meta = super().get_safe_request_meta(request)
        for name in list(meta):
            if self.hidden_settings.search(name):
                meta[name] = self.cleansed_substitute
        return meta
