"""Why an order failed, as one kind of failure: the rule both the lender's panel and the staff's page
read, each in its own words.

A failure is recorded as a code (`FailureCode`) and a reason. The code says where it happened; for
two codes the reason says more, in the words `order_fail`'s callers write it:

- `retries_exhausted` ("Gave up after retries: <error type>: ..."): the service was unavailable or
  rate limited (a transient `ServiceError` each time) -- an outage of the platform -- or the run
  met an error of our own;
- `service_rejected` ("The service refused <method> <path> with status <status>", or "The request
  was not sent: ..." when we refused it ourselves; both written by `refusal_reason`): 401/403 is
  our own access to the service refused (the partner's client credentials); any other status, the
  service refused what we sent.

`failure_kind` names the kind; `FailureKind.retry_helps` says whether sending the order through
again can succeed once its cause is put right (never for what the lender must change: the
transaction keeps the credentials and loan it was created with).
"""

import re
from dataclasses import dataclass

from partner.catalog.credentials import NO_CREDENTIALS
from partner.fulfillment.models import FailureCode
from partner.platform.errors import (
    RequestRefused,
    ServiceError,
    ServiceRateLimitError,
    ServiceUnavailableError,
    service_path,
)

CREDENTIALS_MISSING = "credentials_missing"  # the lender sent no credentials for the product
CREDENTIALS = "credentials"  # the lender's credentials were refused
LOAN_DATA = "loan_data"  # the work cannot use the lender's loan data
PLATFORM_DOWN = "platform_down"  # the service was unavailable (or rate limited) until retries ran out
PLATFORM_ACCESS = "platform_access"  # the service refused our own credentials (401/403)
PLATFORM_REFUSED = "platform_refused"  # the service refused what we sent (another 4xx)
SETUP = "setup"  # the product's setup is incomplete here
PRODUCT_UNKNOWN = "product_unknown"  # the product is not in our catalog
NOT_ON_PLATFORM = "not_on_platform"  # the notification named a transaction not on the service
UNEXPECTED = "unexpected"  # an error of our own stopped the run

LENDER_KINDS = frozenset({CREDENTIALS_MISSING, CREDENTIALS, LOAN_DATA})
PLATFORM_KINDS = frozenset({PLATFORM_DOWN, PLATFORM_REFUSED})
# Sending the order through again can succeed once the cause is put right.
RETRY_HELPS = frozenset({PLATFORM_DOWN, PLATFORM_ACCESS, SETUP, PRODUCT_UNKNOWN, UNEXPECTED})

_OUTAGE_ERRORS = (ServiceUnavailableError.__name__, ServiceRateLimitError.__name__)
_GAVE_UP = re.compile(r"Gave up after retries: (\w+)")
_REFUSED_STATUS = re.compile(r"with status (\d{3})\b|HTTP (\d{3})\b")


@dataclass(frozen=True)
class Failure:
    kind: str
    status: int | None = None  # the service's HTTP status, when the reason names one

    @property
    def retry_helps(self) -> bool:
        return self.kind in RETRY_HELPS


def refusal_reason(exc: ServiceError | RequestRefused, *, said: bool = False) -> str:
    """Why a call refused for good (not transient) failed what it was for, in the one sentence
    `failure_kind` reads: the service's refusal (method, path, status), or ours (nothing was sent).
    `said`: the service's own words follow (a staff delivery's reason: the person who sends it
    again reads what to change)."""
    if isinstance(exc, RequestRefused):
        return f"The request was not sent: {exc}"
    reason = f"The service refused {exc.method} {service_path(exc.url)} with status {exc.status}"
    if said:
        reason += f": {exc.message}" + (f" ({exc.excerpt})" if exc.excerpt else "")
    return reason


def _status(reason: str) -> int | None:
    match = _REFUSED_STATUS.search(reason or "")
    return int(match.group(1) or match.group(2)) if match else None


def failure_kind(code: str, reason: str = "") -> Failure:
    """The kind of a failure recorded as `code` and `reason`."""
    reason = reason or ""
    if code == FailureCode.CREDENTIALS_INVALID:
        return Failure(CREDENTIALS_MISSING if reason == NO_CREDENTIALS else CREDENTIALS)
    if code == FailureCode.ORDER_REFUSED:
        return Failure(LOAN_DATA)
    if code == FailureCode.SETUP_INCOMPLETE:
        return Failure(SETUP)
    if code == FailureCode.PRODUCT_UNKNOWN:
        return Failure(PRODUCT_UNKNOWN)
    if code == FailureCode.RESOURCE_OUTSIDE_SERVICE:
        return Failure(NOT_ON_PLATFORM)
    if code == FailureCode.SERVICE_REJECTED:
        status = _status(reason)
        return Failure(PLATFORM_ACCESS if status in (401, 403) else PLATFORM_REFUSED, status)
    if code == FailureCode.RETRIES_EXHAUSTED:
        gave_up = _GAVE_UP.match(reason)
        if gave_up and gave_up.group(1) in _OUTAGE_ERRORS:
            return Failure(PLATFORM_DOWN, _status(reason))
    return Failure(UNEXPECTED)


# What staff read on a failed order's page: one sentence of cause, one of action, per kind.
# `{reason}` is the recorded reason where it is written for people (the lender's or our setup's).
_STAFF_WORDS = {
    CREDENTIALS_MISSING: (
        "The lender's loan application sent no user name and password for this product.",
        "Nothing to do here: the lender was told to enter the credentials you gave them and to place a new "
        "order; sending this one again would fail the same way.",
    ),
    CREDENTIALS: (
        "The lender's user name and password for this product were not accepted: {reason}",
        "Nothing to do here: the lender was told to correct them and to place a new order; if they call, "
        "check their account under Partner accounts.",
    ),
    LOAN_DATA: (
        "The work could not use the lender's loan data: {reason}",
        "Nothing to do here: the lender was told to correct the loan and to place a new order; sending this "
        "one again would send the same loan.",
    ),
    PLATFORM_DOWN: (
        "The loan platform was unavailable{status} each time the order was tried, until the retries ran out.",
        "Once the platform answers again (the Health page says so), press Retry: the order picks up where it stopped.",
    ),
    PLATFORM_ACCESS: (
        "The loan platform refused this application's own credentials{status}.",
        "Ask your technical team to correct the platform client id and secret of this installation, then press Retry.",
    ),
    PLATFORM_REFUSED: (
        "The loan platform refused what was sent for this order{status}, and would refuse it again.",
        "Tell your technical team, quoting the order's reference; Retry is not offered because it would "
        "send the same thing.",
    ),
    SETUP: (
        "The product's setup in this application is incomplete: {reason}",
        "Complete the product under Products, then press Retry.",
    ),
    PRODUCT_UNKNOWN: (
        "The order is for a product this application does not know: {reason}",
        "Pull the products from the platform (Products, then Pull from the platform), then press Retry.",
    ),
    NOT_ON_PLATFORM: (
        "The notification named a transaction that is not on the loan platform, so it was not trusted.",
        "Nothing to do unless it happens again; then tell your technical team. Retry would refuse it again.",
    ),
    UNEXPECTED: (
        "An error in this application stopped the order.",
        "Tell your technical team (the detail is under Technical detail below), and press Retry once they "
        "have fixed it.",
    ),
}


def failure_for_staff(code: str, reason: str = "") -> dict:
    """`{kind, cause, action, retry}`: a failed order in the staff's words, and whether Retry can help."""
    failure = failure_kind(code, reason)
    cause, action = _STAFF_WORDS[failure.kind]
    status = f" (it answered HTTP {failure.status})" if failure.status else ""
    told = reason.strip().rstrip(".") + "." if reason.strip() else "no reason was given."
    return {
        "kind": failure.kind,
        "cause": cause.format(reason=told, status=status),
        "action": action,
        "retry": failure.retry_helps,
    }
