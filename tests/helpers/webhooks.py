"""Webhooks as the service sends them: a notification's JSON, and its bytes."""

import json


def notification(
    resource_id="txn-1",
    *,
    resource_type="urn:svc:platform:transaction",
    event_type="created",
    instance_id="address-verification",
    **extra,
):
    """The JSON of a notification about `resource_id` (a transaction unless told) naming the product
    `instance_id`, with `extra` fields."""
    body = {
        "eventTime": "2026-11-22T10:00:00Z",
        "eventType": event_type,
        "meta": {
            "resourceType": resource_type,
            "resourceId": resource_id,
            "instanceId": instance_id,
            "resourceRef": f"http://127.0.0.1:8000/sandbox/partner/v2/transactions/{resource_id}",
        },
    }
    body.update(extra)
    return body


def raw(body) -> bytes:
    return json.dumps(body).encode()


def naming(product_name: str, resource_id="txn-1", *, padding: int = 0) -> bytes:
    """The bytes of a `created` notification naming the product `product_name` (its meta.instanceId),
    `padding` characters longer when told."""
    extra = {"padding": "p" * padding} if padding else {}
    return raw(notification(resource_id, instance_id=product_name, **extra))
