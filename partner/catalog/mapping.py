"""Translation between the service's Product JSON and our `Product` columns.

`product_fields_from_service` reads a service object into model field values;
`product_to_service` writes the full object back: the last service copy
(`raw`, so fields we do not model survive a PUT) with our columns on top.
"""

import copy

from django.conf import settings

from .validation import one_line

# (model field, path in the service object, default)
_SCALARS = [
    ("partner_id", ("partnerId",), ""),
    ("name", ("name",), ""),
    ("listing_name", ("listingName",), ""),
    ("environment", ("environment",), ""),
    ("status", ("status",), ""),
    ("interface_url", ("interfaceUrl",), ""),
    ("admin_interface_url", ("adminInterfaceUrl",), ""),
    ("integration_type", ("integrationType",), ""),
    ("service_created", ("created",), ""),
    ("service_created_by", ("createdBy",), ""),
]
_LISTS = [
    ("request_types", ("requestTypes",)),
    ("tags_workflows", ("tags", "workflows")),
    ("tags_categories", ("tags", "categories")),
    ("tags_applications", ("tags", "applications")),
    ("access_allow", ("entitlements", "access", "allow")),
    ("access_deny", ("entitlements", "access", "deny")),
    ("data_transaction", ("entitlements", "data", "transaction")),
    ("webhooks", ("webhooks",)),
]


def _get(data, path, default=None):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return default
        data = data[key]
    return data


def _set(data, path, value):
    for key in path[:-1]:
        if not isinstance(data.get(key), dict):
            data[key] = {}
        data = data[key]
    data[path[-1]] = value


def product_fields_from_service(data: dict) -> dict:
    """Model field values of a service Product object (the `raw` copy included)."""
    fields = {"service_id": str(data.get("id", "")), "raw": copy.deepcopy(data)}
    for field, path, default in _SCALARS:
        value = _get(data, path, default)
        fields[field] = "" if value is None else str(value)
    fields["listing_name"] = one_line(fields["listing_name"])  # it goes into e-mail subjects
    for field, path in _LISTS:
        value = _get(data, path, [])
        fields[field] = copy.deepcopy(value) if isinstance(value, list) else []
    origin = _get(data, ("entitlements", "data", "origin"), {})
    fields["data_origin"] = copy.deepcopy(origin) if isinstance(origin, dict) else {}
    limit = data.get("extensionLimit")
    fields["extension_limit"] = limit if isinstance(limit, int) else None
    return fields


def credential_definitions_from_service(data: dict) -> list[dict] | None:
    """Credential definitions of a service object: the listing's `credentials` array, else the
    update sample's `credential` {required, properties}. None when the object carries neither."""
    listed = data.get("credentials")
    if isinstance(listed, list):
        return [item for item in listed if isinstance(item, dict) and item.get("id")]
    schema = data.get("credential")
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        required = set(schema.get("required") or [])
        return [
            {**(spec if isinstance(spec, dict) else {}), "id": key, "required": key in required}
            for key, spec in schema["properties"].items()
        ]
    return None


def public_urls() -> dict:
    """Where a pushed product must point: this deployment's public address."""
    base = settings.PUBLIC_BASE_URL.rstrip("/")
    return {"interfaceUrl": f"{base}/", "adminInterfaceUrl": f"{base}/admin/", "webhooks": f"{base}/v1/webhooks"}


def product_to_service(product, *, point_at_public_url: bool = False) -> dict:
    """The full Product object for PUT #9 (and for the diff shown before it)."""
    data = copy.deepcopy(product.raw) if isinstance(product.raw, dict) else {}
    data["id"] = product.service_id
    for field, path, _default in _SCALARS:
        value = getattr(product, field)
        if value or _get(data, path) is not None:
            _set(data, path, value)
    for field, path in _LISTS:
        _set(data, path, copy.deepcopy(getattr(product, field)))
    _set(data, ("entitlements", "data", "origin"), copy.deepcopy(product.data_origin))
    if product.extension_limit is not None:
        data["extensionLimit"] = product.extension_limit
    else:
        data.pop("extensionLimit", None)
    if product.pk:
        definitions = [d.as_service_dict() for d in product.credential_definitions.all()]
        if definitions or "credentials" in data:
            data["credentials"] = definitions
        if "credential" in data:
            data["credential"] = {
                "required": [d["id"] for d in definitions if d["required"]],
                "properties": {
                    d["id"]: {k: v for k, v in d.items() if k not in ("id", "required")} for d in definitions
                },
            }
    if point_at_public_url:
        urls = public_urls()
        data["interfaceUrl"] = urls["interfaceUrl"]
        data["adminInterfaceUrl"] = urls["adminInterfaceUrl"]
        data["webhooks"] = [{**hook, "url": urls["webhooks"]} for hook in data.get("webhooks") or []]
    return data


def flatten(data, prefix="") -> dict:
    """`{"a.b": value}` leaves of nested dicts (lists stay whole: they are replaced as a whole)."""
    if isinstance(data, dict) and data:
        out = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: data}
