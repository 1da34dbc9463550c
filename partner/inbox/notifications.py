"""What a webhook notification is: parsing the signed body into the fields we keep.

The spec's notification: eventTime, eventType, meta.resourceType,
meta.resourceId, meta.instanceId (the product's name), meta.resourceRef; an `eventId` when the
service sends one. Parsing never trusts the body: anything else is refused
with a reason. That includes a body nested deeper than the parser goes, a NUL anywhere in
it (PostgreSQL takes none in text or jsonb) and any control character in a field we keep
(ids, types and the reference are plain text, and they are written to the log).
"""

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime

from django.utils.dateparse import parse_datetime

from partner.inbox.errors import NotANotification

# C0, DEL and C1 controls, and the Unicode line and paragraph separators.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class ParsedNotification:
    event_id: str
    event_type: str
    event_time: datetime | None
    resource_type: str
    resource_id: str
    product_name: str  # meta.instanceId: the spec's name for the product's name
    resource_ref: str

    @property
    def dedupe_key(self) -> str:
        """The event id when there is one; else resource type, id, event type and time."""
        if self.event_id:
            return f"id:{self.event_id}"[:128]
        natural = "|".join(
            [
                self.resource_type,
                self.resource_id,
                self.event_type,
                self.event_time.isoformat() if self.event_time else "",
            ]
        )
        return "sha256:" + hashlib.sha256(natural.encode()).hexdigest()


def _text(value, name, *, required=True, limit=2000):
    if value is None or value == "":
        if required:
            raise NotANotification(f"{name} is required")
        return ""
    if not isinstance(value, str):
        raise NotANotification(f"{name} must be a string")
    if len(value) > limit:
        raise NotANotification(f"{name} is too long")
    if _CONTROL.search(value):
        raise NotANotification(f"{name} holds a control character")
    return value


def _nul_refuse(body: bytes, data) -> None:
    """Refuse a NUL in any string of the body, key or value (walked without recursion: the depth is the sender's).

    JSON writes a NUL in a string only as the escape `\\u0000` (the parser refuses a raw one), so a
    body without that text has none and is not walked."""
    if b"\\u0000" not in body:
        return
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and "\x00" in item:
            raise NotANotification("the body holds a NUL control character")


def _json_load(body: bytes):
    try:
        # UTF-8 only: json.loads would also take UTF-16 or UTF-32 bytes, which we could not store as text.
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise NotANotification("the body is not JSON") from None
    except RecursionError:
        raise NotANotification("the body is nested too deeply") from None


def notification_parse(body: bytes) -> ParsedNotification:
    data = _json_load(body)
    if not isinstance(data, dict):
        raise NotANotification("the body is not a JSON object")
    meta = data.get("meta")
    if not isinstance(meta, dict):
        raise NotANotification("meta is required and must be an object")

    raw_time = _text(data.get("eventTime"), "eventTime", limit=64)
    try:
        event_time = parse_datetime(raw_time)
    except ValueError:  # well formed but not a date, such as month 13
        event_time = None
    if event_time is None:
        raise NotANotification("eventTime must be an ISO 8601 timestamp")

    parsed = ParsedNotification(
        event_id=_text(data.get("eventId"), "eventId", required=False, limit=200),
        event_type=_text(data.get("eventType"), "eventType", limit=100),
        event_time=event_time,
        resource_type=_text(meta.get("resourceType"), "meta.resourceType", limit=200),
        resource_id=_text(meta.get("resourceId"), "meta.resourceId", limit=200),
        product_name=_text(meta.get("instanceId"), "meta.instanceId", required=False, limit=200),
        resource_ref=_text(meta.get("resourceRef"), "meta.resourceRef", required=False),
    )
    _nul_refuse(body, data)  # after the fields, which say which one is wrong
    return parsed
