"""What a webhook notification is: parsing the signed body into the fields we keep.

The spec's notification: eventTime, eventType, meta.resourceType,
meta.resourceId, meta.instanceId (the product's name), meta.resourceRef; an `eventId` when the
service sends one. Parsing never trusts the body: anything else is refused
with a reason.
"""

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from django.utils.dateparse import parse_datetime


class NotANotification(Exception):
    """The body was signed correctly but is not a webhook notification."""


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
    return value


def notification_parse(body: bytes) -> ParsedNotification:
    try:
        # UTF-8 only: json.loads would also take UTF-16 or UTF-32 bytes, which we could not store as text.
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise NotANotification("the body is not JSON") from None
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

    return ParsedNotification(
        event_id=_text(data.get("eventId"), "eventId", required=False, limit=200),
        event_type=_text(data.get("eventType"), "eventType", limit=100),
        event_time=event_time,
        resource_type=_text(meta.get("resourceType"), "meta.resourceType", limit=200),
        resource_id=_text(meta.get("resourceId"), "meta.resourceId", limit=200),
        product_name=_text(meta.get("instanceId"), "meta.instanceId", required=False, limit=200),
        resource_ref=_text(meta.get("resourceRef"), "meta.resourceRef", required=False),
    )
