"""Rules for the nested parts of a product (request types, URNs, webhooks, entitlements).

Each function returns a list of human-readable problems (empty when the value
conforms), so model `clean()` and forms can show them all at once. The spec
does not list every allowed value of its enumerations: what it shows is
checked exactly (resource types, action formats), the rest by shape.
"""

import re

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from partner.platform import formats, urns

_ENUM = re.compile(r"^[A-Z][A-Z0-9_]*$")
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*$")
_INSTANCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_url = URLValidator(schemes=["http", "https"])
_LINE_BREAKS_AND_CONTROLS = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")


def one_line(value) -> str:
    """`value` as one line of text: line breaks and control characters become one space, the ends trimmed.

    A product's listing name comes from the service's listing and the admin, and goes into e-mail
    subjects and page titles, where a CR or LF breaks the header (Django refuses to send it): it is
    cleaned where it enters (the pull and the import through `mapping`, the admin's form)."""
    if not isinstance(value, str):
        return "" if value is None else str(value)
    return _LINE_BREAKS_AND_CONTROLS.sub(" ", value).strip()


def url_problems(value) -> list[str]:
    if value in (None, ""):
        return []
    try:
        _url(value)
    except ValidationError:
        return [f"{value!r} is not a valid http(s) URL."]
    return []


def string_list_problems(value, *, what="item") -> list[str]:
    if not isinstance(value, list):
        return ["Must be a JSON array of strings."]
    problems = [f"Each {what} must be a non-empty string." for item in value if not isinstance(item, str) or not item]
    if len(set(map(str, value))) != len(value):
        problems.append("Values must not repeat.")
    return problems[:1] + problems[-1:] if len(problems) > 2 else problems


def request_types_problems(value) -> list[str]:
    problems = string_list_problems(value, what="request type")
    if problems:
        return problems
    return [
        f"{item!r} is not a request type (upper case, like NEW_REQUEST)." for item in value if not _ENUM.match(item)
    ]


def instance_urn_problem(value) -> str | None:
    """Why `value` is not a lender instance URN (`urns.instance_urn`: `<prefix>:<host>:<id>`), or None if it is."""
    prefix = urns.instance_urn("")
    if not isinstance(value, str) or not value.startswith(prefix):
        return f"{value!r} is not a lender instance URN (form {prefix}<instance id>)."
    if not _INSTANCE_ID.match(value[len(prefix) :]):
        return f"{value!r} has no valid instance id after {prefix}."
    return None


def instance_urns_problems(value) -> list[str]:
    if not isinstance(value, list):
        return ["Must be a JSON array of instance URNs."]
    problems = [p for p in (instance_urn_problem(item) for item in value) if p]
    if len(set(map(str, value))) != len(value):
        problems.append("Instance URNs must not repeat.")
    return problems


def webhooks_problems(value) -> list[str]:
    if not isinstance(value, list):
        return ["Must be a JSON array of webhook subscriptions."]
    problems = []
    resource_types = urns.webhook_resource_types()
    for index, item in enumerate(value, start=1):
        where = f"Webhook {index}"
        if not isinstance(item, dict):
            problems.append(f"{where} must be an object with url, events and resource.")
            continue
        unknown = sorted(set(item) - {"subscriptionId", "url", "events", "resource"})
        if unknown:
            problems.append(f"{where}: unknown field(s) {', '.join(unknown)}.")
        if not item.get("url"):
            problems.append(f"{where}: url is required.")
        else:
            problems += [f"{where}: {p}" for p in url_problems(item["url"])]
        if item.get("resource") not in resource_types:
            problems.append(f"{where}: resource must be one of {', '.join(resource_types)}.")
        events_problem = formats.event_types_problem(item.get("events"))
        if events_problem:
            problems.append(f"{where}: {events_problem}")
        if "subscriptionId" in item and not isinstance(item["subscriptionId"], str):
            problems.append(f"{where}: subscriptionId must be a string.")
    return problems


def action_entitlements_problems(results, *, where: str) -> list[str]:
    if not isinstance(results, list):
        return [f"{where}: response.results must be an array of {{action, formats}}."]
    problems = []
    for index, item in enumerate(results, start=1):
        here = f"{where}, result {index}"
        if not isinstance(item, dict):
            problems.append(f"{here} must be an object {{action, formats}}.")
            continue
        action = item.get("action")
        if not isinstance(action, str) or not _ENUM.match(action):
            problems.append(f"{here}: action must be an upper-case action name (like {formats.DISCLOSURE_ACTION}).")
        fmts = item.get("formats")
        if not isinstance(fmts, list) or not fmts:
            problems.append(f"{here}: formats must be a non-empty array of media types.")
            continue
        for fmt in fmts:
            if not isinstance(fmt, str) or not _MEDIA_TYPE.match(fmt):
                problems.append(f"{here}: {fmt!r} is not a media type.")
            elif action == formats.DISCLOSURE_ACTION and fmt != formats.DISCLOSURE_FORMAT:
                problems.append(f"{here}: {formats.DISCLOSURE_ACTION} takes only {formats.DISCLOSURE_FORMAT}.")
    return problems


def data_transaction_problems(value) -> list[str]:
    if not isinstance(value, list):
        return ["Must be a JSON array of transaction data entitlements."]
    problems = []
    for index, item in enumerate(value, start=1):
        where = f"Entitlement {index}"
        if not isinstance(item, dict):
            problems.append(f"{where} must be an object.")
            continue
        problems += [f"{where}: {p}" for p in request_types_problems(item.get("requestTypes", []))]
        for part in ("request", "response"):
            if part in item and not isinstance(item[part], dict):
                problems.append(f"{where}: {part} must be an object.")
        response = item.get("response")
        if isinstance(response, dict) and "results" in response:
            problems += action_entitlements_problems(response["results"], where=where)
        if "extensionCount" in item and not isinstance(item["extensionCount"], int):
            problems.append(f"{where}: extensionCount must be an integer.")
    return problems


def pattern_problems(pattern) -> list[str]:
    if not pattern:
        return []
    try:
        re.compile(pattern)
    except re.error as exc:
        return [f"Not a valid regular expression ({exc.msg})."]
    return []
