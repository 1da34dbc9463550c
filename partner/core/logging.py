"""Logging filters and formatters: the request id and the ids at hand on every line, no secret in any line.

`RedactSecretsFilter` masks two kinds of secret before a record is written:
the values we know are secret (client secret, signing secrets, the Django
secret key, encryption keys, database password, and anything registered at
run time with `secret_register`, such as access tokens and product signing
secrets) and anything that looks like `password=...`, `"token": "..."` or
`Bearer ...`, whatever its value.

`log_context(notification_id=..., order_id=..., transaction_id=...)` puts the ids of the work at
hand on every line logged inside it; `RequestIdFilter` copies them, with the request (or task) id,
onto the record. Two formatters write a record: `OneLineFormatter` (text, the default) and
`JsonLineFormatter` (`LOG_FORMAT=json`: one JSON object per line).
"""

import contextlib
import contextvars
import logging
import re
import threading
from collections import OrderedDict
from datetime import UTC, datetime
from types import MappingProxyType

from django.views.debug import SafeExceptionReporterFilter
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonEncoder, JsonFormatter

MASK = "********"

request_id_var = contextvars.ContextVar("request_id", default="-")
log_context_var = contextvars.ContextVar("log_context", default=MappingProxyType({}))

# The JSON line's own fields, which an id of `log_context` must not take the place of.
_JSON_FIELDS = frozenset({"time", "level", "logger", "message", "request_id", "exc_info", "stack_info"})


@contextlib.contextmanager
def log_context(**ids):
    """Every line logged inside the block carries these ids, besides those of the blocks around it.

    `with log_context(notification_id=n.pk):` around the work on one notification, order or
    transaction; an id given as None is left out. The ids are copied onto each record by
    `RequestIdFilter`: fields of their own in the JSON lines, `name=value` after the request id in the
    text ones.
    """
    taken = _JSON_FIELDS.intersection(ids)
    if taken:
        raise TypeError(f"log_context: {', '.join(sorted(taken))} is a field of every line, not an id")
    merged = {**log_context_var.get(), **{name: value for name, value in ids.items() if value is not None}}
    token = log_context_var.set(MappingProxyType(merged))
    try:
        yield
    finally:
        log_context_var.reset(token)


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

    values = [
        settings.SECRET_KEY,
        settings.SVC_CLIENT_SECRET,
        *settings.SVC_SIGNING_SECRETS,
        *settings.FIELD_ENCRYPTION_KEYS,
    ]
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
    """Put the current request (or task) id on the record as `request_id`, and the ids of `log_context`.

    `log_context` holds the ids (a mapping, for the JSON lines), `log_context_text` the same as
    ` name=value` pairs (for the text lines: `[request-id order_id=7 transaction_id=T-1]`).
    """

    def filter(self, record):
        record.request_id = request_id_var.get()
        ids = log_context_var.get()
        record.log_context = ids
        record.log_context_text = "".join(f" {name}={value}" for name, value in ids.items())
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


def control_characters_escape(text: str, *, keep: str = "") -> str:
    """`text` with every control character written as an escape (`\\n`, `\\x1b`, `\\u2028`), but those in `keep`."""
    if keep:
        return _CONTROL.sub(lambda match: match.group() if match.group() in keep else _control_escape(match), text)
    return _CONTROL.sub(_control_escape, text)


class OneLineFormatter(logging.Formatter):
    """One line per event, and no control character in it: each is written as an escape (`\\n`, `\\x00`).

    A log collector then keeps an event (with its traceback) together, text from a request
    cannot start a line of its own that looks like another event (nor cut one with a NUL or
    a NEL), and no escape sequence reaches a terminal that shows the log.
    """

    def format(self, record):
        return control_characters_escape(super().format(record))


class JsonLineFormatter(JsonFormatter):
    """One JSON object per line (`LOG_FORMAT=json`), for a log collector to read.

    Fields: `time` (ISO 8601, UTC), `level`, `logger`, `message`, `request_id`, the ids of
    `log_context` (`notification_id`, `order_id`, `transaction_id`) where they apply, the fields a
    call passed with `extra=`, and `exc_info` (the traceback) when there is one.

    Built on python-json-logger, which takes the `extra=` fields off the record and turns the values
    JSON has no type for (datetimes, UUIDs, exceptions, bytes) into text. The message and traceback
    are masked by `RedactSecretsFilter` on the handler, as in the text lines; the fields only this
    formatter writes (`extra=`, `stack_info`) are masked here. No control character is written raw: in
    every field it becomes the same visible escape as in the text lines, but for the line breaks of a
    traceback, which JSON writes as `\\n` (the object stays on one line, and reads as a traceback).
    """

    _encoder = JsonEncoder()
    # Written by us (or masked by RedactSecretsFilter): not masked again.
    _MASKED_BEFORE = frozenset({"time", "level", "logger", "message", "request_id", "exc_info"})
    _MULTILINE = frozenset({"exc_info", "stack_info"})
    _FIRST = ("time", "level", "logger", "message", "request_id")

    def __init__(self, **kwargs):
        kwargs.setdefault("rename_fields", {"asctime": "time", "levelname": "level", "name": "logger"})
        kwargs.setdefault(
            "reserved_attrs", [*RESERVED_ATTRS, "taskName", "log_context", "log_context_text", "color_message"]
        )
        kwargs.setdefault("json_ensure_ascii", False)  # names with accents stay readable; controls are escaped
        super().__init__(["asctime", "levelname", "name", "message", "request_id"], **kwargs)

    def formatTime(self, record, datefmt=None):  # noqa: N802 - logging.Formatter's name
        moment = datetime.fromtimestamp(record.created, tz=UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def add_fields(self, log_data, record, message_dict):
        super().add_fields(log_data, record, message_dict)
        if log_data.get("request_id") is None:  # a handler without RequestIdFilter
            log_data["request_id"] = request_id_var.get()
        if record.exc_text:  # the traceback RedactSecretsFilter masked
            log_data["exc_info"] = record.exc_text
        ids = getattr(record, "log_context", None)
        ids = log_context_var.get() if ids is None else ids
        # The line's own fields, then the ids (unless passed with extra=, which wins), then the rest.
        rest = {name: log_data.pop(name) for name in list(log_data) if name not in self._FIRST}
        log_data.update((name, value) for name, value in ids.items() if name not in rest)
        log_data.update(rest)

    def process_log_record(self, log_data):
        for name, value in log_data.items():
            if name not in self._MASKED_BEFORE:
                value = self._masked(value)
            log_data[name] = self._escaped(value, keep="\n" if name in self._MULTILINE else "")
        return log_data

    def _plain(self, value):
        if value is None or isinstance(value, str | int | float | bool | dict | list | tuple):
            return value
        return self._encoder.default(value)

    def _masked(self, value):
        value = self._plain(value)
        if isinstance(value, str):
            return redact(value)
        if isinstance(value, dict):
            return {key: self._masked(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._masked(item) for item in value]
        return value

    def _escaped(self, value, *, keep=""):
        value = self._plain(value)
        if isinstance(value, str):
            return control_characters_escape(value, keep=keep)
        if isinstance(value, dict):
            return {control_characters_escape(str(key)): self._escaped(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._escaped(item, keep=keep) for item in value]
        return value


class SecretsExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django's error reports, also hiding URLs with credentials, PATs and auth headers."""

    hidden_settings = re.compile("API|TOKEN|KEY|SECRET|PASS|SIGNATURE|AUTH|PAT|URL|DSN|COOKIE", flags=re.IGNORECASE)

    def get_safe_request_meta(self, request):
        meta = super().get_safe_request_meta(request)
        for name in list(meta):
            if self.hidden_settings.search(name):
                meta[name] = self.cleansed_substitute
        return meta
