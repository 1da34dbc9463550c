"""Rules on the JSON documents the sandbox accepts: products, merge patches, loans
filtered by data entitlements, and the transaction response payload.

Each check returns a list of `{"field", "message"}` problems (empty: conforms);
the views turn a non-empty list into a 4xx with a JSON error body.
"""

import re

from django.conf import settings

from partner.platform import formats, urns

# Fields the service manages: a PUT or PATCH keeps them as stored. Sending another
# id or partnerId is refused (it names another product); created/createdBy are just kept.
PRODUCT_READ_ONLY = ("id", "partnerId", "created", "createdBy")
PRODUCT_IDENTITY = ("id", "partnerId")

_STRING_FIELDS = (
    "id",
    "partnerId",
    "name",
    "listingName",
    "environment",
    "status",
    "interfaceUrl",
    "adminInterfaceUrl",
    "integrationType",
    "created",
    "createdBy",
)
_URL_FIELDS = ("interfaceUrl", "adminInterfaceUrl")
_URL = re.compile(r"^https?://[^\s/$.?#][^\s]*$", re.IGNORECASE)
_MEDIA_TYPE = re.compile(r"^[\w.+-]+/[\w.+-]+$")
_CREDENTIAL_FIELDS = {
    "id": str,
    "type": str,
    "title": str,
    "minimum": int,
    "maximum": int,
    "pattern": str,
    "secret": bool,
    "scope": str,
    "required": bool,
}


def problem(field: str, message: str) -> dict:
    return {"field": field, "message": message}


def _string_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def merge_patch(target, patch):
    """RFC 7396 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def product_problems(document) -> list[dict]:
    """Type rules of the spec's Product fields (fields the spec does not list pass through)."""
    if not isinstance(document, dict):
        return [problem("", "a product must be a JSON object")]
    problems = []
    for name in _STRING_FIELDS:
        if name in document and not isinstance(document[name], str):
            problems.append(problem(name, "must be a string"))
    for name in ("name", "listingName"):
        if not (isinstance(document.get(name), str) and document[name].strip()):
            problems.append(problem(name, "is required"))
    for name in _URL_FIELDS:
        if isinstance(document.get(name), str) and not _URL.match(document[name]):
            problems.append(problem(name, "must be an absolute http(s) URL"))
    if "requestTypes" in document and not _string_list(document["requestTypes"]):
        problems.append(problem("requestTypes", "must be an array of strings"))
    if "extensionLimit" in document and (
        not isinstance(document["extensionLimit"], int) or isinstance(document["extensionLimit"], bool)
    ):
        problems.append(problem("extensionLimit", "must be an integer"))
    problems += _credentials_problems(document)
    tags = document.get("tags")
    if tags is not None:
        if not isinstance(tags, dict):
            problems.append(problem("tags", "must be an object"))
        else:
            for name in ("workflows", "categories", "applications"):
                if name in tags and not _string_list(tags[name]):
                    problems.append(problem(f"tags.{name}", "must be an array of strings"))
    problems += _entitlements_problems(document.get("entitlements"))
    problems += _webhooks_problems(document.get("webhooks"))
    return problems


def _credentials_problems(document) -> list[dict]:
    problems = []
    if "credentials" in document:
        items = document["credentials"]
        if not isinstance(items, list):
            return [problem("credentials", "must be an array of credential definitions")]
        for index, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("id"), str):
                problems.append(problem(f"credentials[{index}]", "must be an object with a string id"))
                continue
            for name, kind in _CREDENTIAL_FIELDS.items():
                value = item.get(name)
                if value is not None and (not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
                    problems.append(problem(f"credentials[{index}].{name}", f"must be of type {kind.__name__}"))
            if isinstance(item.get("pattern"), str):
                try:
                    re.compile(item["pattern"])
                except re.error:
                    problems.append(problem(f"credentials[{index}].pattern", "is not a regular expression"))
    if "credential" in document:
        credential = document["credential"]
        if not isinstance(credential, dict):
            problems.append(problem("credential", "must be an object"))
        else:
            if "required" in credential and not _string_list(credential["required"]):
                problems.append(problem("credential.required", "must be an array of strings"))
            if "properties" in credential and not isinstance(credential["properties"], dict):
                problems.append(problem("credential.properties", "must be an object"))
    return problems


def _entitlements_problems(entitlements) -> list[dict]:
    if entitlements is None:
        return []
    if not isinstance(entitlements, dict):
        return [problem("entitlements", "must be an object")]
    return [*_access_problems(entitlements.get("access")), *_data_problems(entitlements.get("data"))]


def _access_problems(access) -> list[dict]:
    problems = []
    if access is not None:
        if not isinstance(access, dict):
            problems.append(problem("entitlements.access", "must be an object"))
        else:
            prefix = urns.instance_urn("")
            for name in ("allow", "deny"):
                if name not in access:
                    continue
                if not _string_list(access[name]):
                    problems.append(problem(f"entitlements.access.{name}", "must be an array of strings"))
                    continue
                for value in access[name]:
                    if not value.startswith(prefix) or ":" in value[len(prefix) :] or value == prefix:
                        problems.append(
                            problem(
                                f"entitlements.access.{name}", f"{value!r} is not of the form {prefix}<instance_id>"
                            )
                        )
    return problems


def _data_problems(data) -> list[dict]:
    problems = []
    if data is None:
        return problems
    if not isinstance(data, dict):
        return [*problems, problem("entitlements.data", "must be an object")]
    if "origin" in data and not isinstance(data["origin"], dict):
        problems.append(problem("entitlements.data.origin", "must be an object"))
    items = data.get("transaction")
    if items is None:
        return problems
    if not isinstance(items, list):
        return [*problems, problem("entitlements.data.transaction", "must be an array")]
    for index, item in enumerate(items):
        where = f"entitlements.data.transaction[{index}]"
        if not isinstance(item, dict):
            problems.append(problem(where, "must be an object"))
            continue
        if not _string_list(item.get("requestTypes")):
            problems.append(problem(f"{where}.requestTypes", "must be an array of strings"))
        for name in ("request", "response"):
            if name in item and not isinstance(item[name], dict):
                problems.append(problem(f"{where}.{name}", "must be an object"))
        if "extensionCount" in item and not isinstance(item["extensionCount"], int):
            problems.append(problem(f"{where}.extensionCount", "must be an integer"))
        results = (item.get("response") or {}).get("results") if isinstance(item.get("response"), dict) else None
        if results is None:
            continue
        if not isinstance(results, list):
            problems.append(problem(f"{where}.response.results", "must be an array"))
            continue
        for number, result in enumerate(results):
            if not (
                isinstance(result, dict)
                and isinstance(result.get("action"), str)
                and _string_list(result.get("formats"))
            ):
                problems.append(problem(f"{where}.response.results[{number}]", "must be {action, formats[]}"))
    return problems


def _webhooks_problems(webhooks) -> list[dict]:
    if webhooks is None:
        return []
    if not isinstance(webhooks, list):
        return [problem("webhooks", "must be an array")]
    known = set(urns.webhook_resource_types())
    problems = []
    for index, item in enumerate(webhooks):
        where = f"webhooks[{index}]"
        if not isinstance(item, dict):
            problems.append(problem(where, "must be an object"))
            continue
        if not (isinstance(item.get("url"), str) and _URL.match(item["url"])):
            problems.append(problem(f"{where}.url", "must be an absolute http(s) URL"))
        if item.get("resource") not in known:
            problems.append(problem(f"{where}.resource", f"must be one of {sorted(known)}"))
        if "events" in item:
            events_problem = formats.event_types_problem(item["events"])
            if events_problem:
                problems.append(problem(f"{where}.events", events_problem.removeprefix("events ")))
        if "subscriptionId" in item and not isinstance(item["subscriptionId"], str):
            problems.append(problem(f"{where}.subscriptionId", "must be a string"))
    return problems


def read_only_problems(document: dict, current: dict) -> list[dict]:
    """A PUT/PATCH may repeat the product's id and partnerId but not change them."""
    return [
        problem(name, "is managed by the service and cannot be changed")
        for name in PRODUCT_IDENTITY
        if name in document and document[name] is not None and document[name] != current.get(name)
    ]


def entitlement_for(product_data: dict, request_type: str) -> dict | None:
    """The transaction data entitlement of the product that covers `request_type`."""
    for item in ((product_data.get("entitlements") or {}).get("data") or {}).get("transaction") or []:
        if isinstance(item, dict) and request_type in (item.get("requestTypes") or []):
            return item
    return None


def loan_filtered(loan: dict, entitlement: dict | None) -> dict:
    """The loan as a data entitlement lets the product see it.

    The entitlement model is not shown in the spec; the sandbox reads an optional
    `fields` array of top-level loan field names (absent: the whole loan).
    """
    fields = (entitlement or {}).get("fields")
    if not isinstance(fields, list):
        return dict(loan)
    return {key: value for key, value in loan.items() if key in fields}


def access_allowed(product_data: dict, instance_urn: str) -> bool:
    access = (product_data.get("entitlements") or {}).get("access") or {}
    if instance_urn in (access.get("deny") or []):
        return False
    return instance_urn in (access.get("allow") or [])


def response_problems(payload, *, product_data: dict, request_type: str) -> tuple[int, list[dict]]:
    """Rules of the transaction response PATCH that need no database: (status code, problems)."""
    if not isinstance(payload, dict):
        return 400, [problem("", "the response must be a JSON object")]
    problems = []
    for name in ("status", "partnerStatus", "referenceNumber", "loanFormat"):
        if name in payload and not isinstance(payload[name], str):
            problems.append(problem(name, "must be a string"))
    for name in ("respondingParty", "loan", "result"):
        if name in payload and not isinstance(payload[name], dict):
            problems.append(problem(name, "must be an object"))
    party = payload.get("respondingParty")
    if isinstance(party, dict) and "pointOfContact" in party and not isinstance(party["pointOfContact"], dict):
        problems.append(problem("respondingParty.pointOfContact", "must be an object"))
    if "loan" in payload and payload.get("loanFormat") != formats.LOAN_FORMAT:
        problems.append(problem("loanFormat", f"must be {formats.LOAN_FORMAT} when loan is sent"))
    elif "loanFormat" in payload and payload["loanFormat"] != formats.LOAN_FORMAT:
        problems.append(problem("loanFormat", f"must be {formats.LOAN_FORMAT}"))
    if "resources" in payload:
        resources = payload["resources"]
        if not isinstance(resources, list):
            problems.append(problem("resources", "must be an array"))
        else:
            for index, item in enumerate(resources):
                if not (isinstance(item, dict) and isinstance(item.get("id"), str)):
                    problems.append(problem(f"resources[{index}]", "must be an object with a string id"))
    if "result" in payload and isinstance(payload["result"], dict):
        problems += [violation.as_dict() for violation in formats.disclosure_result_violations(payload["result"])]
    if problems:
        return 400, problems
    if isinstance(payload.get("loan"), dict):
        fields = ((entitlement_for(product_data, request_type) or {}).get("response") or {}).get("fields")
        if isinstance(fields, list):
            refused = sorted(set(payload["loan"]) - set(fields))
            if refused:
                return 403, [
                    problem(f"loan.{name}", "is not in the product's response data entitlement") for name in refused
                ]
    if "result" in payload and not formats.action_entitled(
        product_data,
        request_type=request_type,
        action=payload["result"]["action"],
        fmt=payload["result"]["format"],
    ):
        return 403, [
            problem(
                "result.action",
                f"the product does not hold the {payload['result']['action']} action entitlement "
                f"in {payload['result']['format']} for request type {request_type}",
            )
        ]
    return 200, []


def slot_request_problems(items) -> list[dict]:
    if not isinstance(items, list) or not items:
        return [problem("", "the body must be a non-empty JSON array of {name, mimeType}")]
    limit = settings.SANDBOX_MAX_SLOTS_PER_REQUEST
    if len(items) > limit:
        return [problem("", f"at most {limit} slots per request")]
    problems = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            problems.append(problem(f"[{index}]", "must be an object"))
            continue
        if not (isinstance(item.get("name"), str) and item["name"].strip()) or len(item.get("name", "")) > 255:
            problems.append(problem(f"[{index}].name", "is required (a file name of at most 255 characters)"))
        if not (isinstance(item.get("mimeType"), str) and _MEDIA_TYPE.match(item["mimeType"])):
            problems.append(problem(f"[{index}].mimeType", "must be a media type such as application/pdf"))
    return problems
