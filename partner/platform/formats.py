"""Media types and actions of the spec, and the disclosure status action rules."""

from dataclasses import dataclass

# Loan data is versioned by media type and sent in `loanFormat`.
LOAN_FORMAT = "application/vnd.plm-2.0.0+json"

# The disclosure tracking status update action (spec, endpoint #3 note 8).
DISCLOSURE_FORMAT = "application/vnd.disclosure.update-status-1.0.0.json"
DISCLOSURE_ACTION = "UPDATE_DISCLOSURE_STATUS"
DISCLOSURE_STATUSES = ("active",)
DISCLOSURE_DETAIL_FIELDS = ("status", "comments")

# Response `status` values the spec shows.
RESPONSE_PROCESSING = "processing"
RESPONSE_COMPLETED = "completed"

# Webhook resource types and event types are URNs: see partner.platform.urns.
WEBHOOK_EVENT_CREATED = "created"
# Every event type the service sends, of either resource type (spec: "value seen: `created`"): what a
# webhook subscription may name.
WEBHOOK_EVENT_TYPES = (WEBHOOK_EVENT_CREATED,)


def event_types_problem(events) -> str | None:
    """Why `events` is not a subscription's list of event types (None: it is): a non-empty array of
    types the service sends, none twice."""
    known = ", ".join(f'"{event}"' for event in WEBHOOK_EVENT_TYPES)
    if not isinstance(events, list) or not events or not all(isinstance(e, str) and e for e in events):
        return f"events must be a non-empty array of event types (the service sends {known})."
    unknown = [event for event in events if event not in WEBHOOK_EVENT_TYPES]
    if unknown:
        names = ", ".join(f'"{event}"' for event in unknown)
        verb = "is not an event type" if len(unknown) == 1 else "are not event types"
        return f"{names} {verb} the service sends ({known})."
    if len(set(events)) != len(events):
        return "events must not repeat."
    return None


@dataclass(frozen=True)
class RuleViolation:
    field: str
    message: str

    def as_dict(self):
        return {"field": self.field, "message": self.message}


def disclosure_result_violations(result) -> list[RuleViolation]:
    """Every way `result` breaks the disclosure status action rules (empty when it conforms)."""
    if not isinstance(result, dict):
        return [RuleViolation("result", "must be an object")]
    problems = []
    if result.get("format") != DISCLOSURE_FORMAT:
        problems.append(RuleViolation("result.format", f"must be exactly {DISCLOSURE_FORMAT}"))
    if result.get("action") != DISCLOSURE_ACTION:
        problems.append(RuleViolation("result.action", f"must be exactly {DISCLOSURE_ACTION}"))
    details = result.get("details")
    if not isinstance(details, dict):
        problems.append(RuleViolation("result.details", "must be an object"))
        return problems
    for name in sorted(set(details) - set(DISCLOSURE_DETAIL_FIELDS)):
        problems.append(RuleViolation(f"result.details.{name}", "is not allowed (only status and comments)"))
    if "status" not in details:
        problems.append(RuleViolation("result.details.status", "is required"))
    elif details["status"] not in DISCLOSURE_STATUSES:
        problems.append(RuleViolation("result.details.status", "must be 'active'"))
    if "comments" in details and not isinstance(details["comments"], str):
        problems.append(RuleViolation("result.details.comments", "must be a string"))
    return problems


def action_entitled(product: dict, *, action: str, request_type: str | None = None, fmt: str | None = None) -> bool:
    """Does the product (a service Product object) hold `action`, in `fmt` and for `request_type`
    when given (any format, any request type otherwise)? Malformed parts hold nothing."""
    entitlements = product.get("entitlements") if isinstance(product, dict) else None
    data = entitlements.get("data") if isinstance(entitlements, dict) else None
    items = data.get("transaction") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if request_type is not None and request_type not in (item.get("requestTypes") or []):
            continue
        response = item.get("response")
        results = response.get("results") if isinstance(response, dict) else None
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, dict) or result.get("action") != action:
                continue
            formats = result.get("formats")
            if fmt is None or (isinstance(formats, list) and fmt in formats):
                return True
    return False


def loan_path(field) -> tuple[str, ...] | None:
    """A data entitlement's field as a path into the loan, or None when it is not one: the spec
    writes loan data as paths (`loan.property`), products also name the top-level key (`property`);
    both name ("property",), and `loan.property.city` names ("property", "city"). `loan` alone names
    the whole loan, ()."""
    if not isinstance(field, str):
        return None
    parts = field.strip().split(".")
    if parts and parts[0] == "loan":
        parts = parts[1:]
    if not all(part and part == part.strip() for part in parts):
        return None
    return tuple(parts)


def response_loan_fields(product: dict, *, request_type: str) -> list[str] | None:
    """The top-level loan fields a response may carry for `request_type` (the response data
    entitlement: `entitlements.data.transaction[].response.fields`); None when the product names
    none (the spec does not show the model: the service then decides), [] when it covers no field."""
    entitlements = product.get("entitlements") if isinstance(product, dict) else None
    data = entitlements.get("data") if isinstance(entitlements, dict) else None
    items = data.get("transaction") if isinstance(data, dict) else None
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict) or request_type not in (item.get("requestTypes") or []):
            continue
        response = item.get("response")
        fields = response.get("fields") if isinstance(response, dict) else None
        if not isinstance(fields, list):
            return None
        # `appraisal` and `loan.appraisal` alike: a response carries whole top-level fields.
        return [path[0] for path in map(loan_path, fields) if path is not None and len(path) == 1]
    return []
