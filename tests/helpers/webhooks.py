"""Webhooks as the service sends them: a notification's JSON, and its bytes."""

import json


def notification(resource_id="txn-1", *, resource_type="urn:svc:platform:transaction", event_type="created", **extra):
    """The JSON of a notification about `resource_id` (a transaction unless told), with `extra` fields."""
    body = {
        "eventTime": "2026-11-22T10:00:00Z",
        "eventType": event_type,
        "meta": {
            "resourceType": resource_type,
            "resourceId": resource_id,
            "instanceId": "address-verification",
            "resourceRef": f"http://127.0.0.1:8000/sandbox/partner/v2/transactions/{resource_id}",
        },
    }
    body.update(extra)
    return body


def raw(body) -> bytes:
    return json.dumps(body).encode()
