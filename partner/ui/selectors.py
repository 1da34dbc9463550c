"""Reads behind the embedded UI: the origin the host handed the page, and a transaction's progress.

`origin_context_get` is the one place that turns an origin id and partner
access token into what the page may show: it reads the origin from the
service (endpoint #1), checks the lender's credentials with the catalog's
check, and keeps only a summary (never the credentials, never the whole loan).
Every UI endpoint that shows lender data goes through it, so only the lender
in the host, holding a live origin, can read anything.
"""

import re
from dataclasses import dataclass, field

from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.services import product_ensure
from partner.fulfillment.selectors import tracker_get, tracker_view
from partner.platform import client as platform
from partner.platform.errors import ServiceError
from partner.ui.forms import order_options_schema

LOAN_NOT_FOUND = "loan object was not found"

# Statuses of endpoint #1 that mean "this origin id / token is no longer good":
# the page renews the origin through the host and asks again.
_ORIGIN_GONE = {401, 403, 404, 410}


_TOKEN_SHAPE = re.compile(r"[\x21-\x7e]{1,4096}")
_MAX_ID_LENGTH = 200


class OriginProblem(Exception):
    """The origin cannot be shown; `http_status` and `body` are what the proxy answers."""

    def __init__(self, http_status: int, body: dict):
        super().__init__(str(body))
        self.http_status = http_status
        self.body = body


@dataclass(frozen=True)
class OriginContext:
    """What the UI may know about an origin: safe to serialise as is."""

    origin_id: str
    product_service_id: str
    product_name: str
    fulfiller: str
    summary: dict = field(default_factory=dict)
    # Who the lender is to us (the partner account their credentials matched), for what they may see.
    account_id: int | None = None
    company_id: int | None = None


def _text(value) -> str:
    return value.strip() if isinstance(value, str) else ""


def _person_name(person) -> str:
    if not isinstance(person, dict):
        return ""
    full = _text(person.get("fullName")) or _text(person.get("name"))
    if full:
        return full
    parts = [_text(person.get(key)) for key in ("firstName", "middleName", "lastName", "suffix")]
    return " ".join(part for part in parts if part)


def loan_borrower_name(loan: dict) -> str:
    """The borrower's name, from the shapes the loan format uses (borrower or first application)."""
    for candidate in (
        loan.get("borrower"),
        *[app.get("borrower") for app in loan.get("applications") or [] if isinstance(app, dict)],
    ):
        name = _person_name(candidate)
        if name:
            return name
    borrowers = loan.get("borrowers")
    if isinstance(borrowers, list):
        for borrower in borrowers:
            name = _person_name(borrower)
            if name:
                return name
    return ""


def loan_summary(loan: dict) -> dict:
    """Borrower, subject property, loan purpose and usage: what the order form shows."""
    prop = loan.get("property") if isinstance(loan.get("property"), dict) else {}
    return {
        "borrower": loan_borrower_name(loan),
        "loanNumber": _text(loan.get("loanNumber")),
        "property": {key: _text(prop.get(key)) for key in ("streetAddress", "city", "state", "postalCode", "county")},
        "loanPurposeType": _text(prop.get("loanPurposeType")) or _text(loan.get("loanPurposeType")),
        "propertyUsageType": _text(prop.get("propertyUsageType")) or _text(loan.get("propertyUsageType")),
    }


def _errors(code: str, message: str, status: int | None = None) -> dict:
    return {"errors": [{"status": status, "code": code, "message": message}]}


def _service_error_body(exc) -> dict:
    status = getattr(exc, "status", None)
    if status in _ORIGIN_GONE:
        message = "The lender's session with the host has ended or was not recognised."
        code = "origin_expired"
    elif status is None or status >= 500:
        message = "The service did not answer. Try again in a minute."
        code = "service_unavailable"
    else:
        message = "The service refused to give the origin."
        code = "service_refused"
    return _errors(code, message, status)


def origin_context_get(*, origin_id: str, partner_access_token: str) -> OriginContext:
    """Read and check the origin; raise OriginProblem with the proxy's answer when it cannot be shown."""
    if not origin_id or not partner_access_token:
        raise OriginProblem(400, _errors("origin_missing", "An origin id and partner access token are required."))
    if not _TOKEN_SHAPE.fullmatch(partner_access_token) or len(origin_id) > _MAX_ID_LENGTH:
        # The token travels on as an HTTP header: only visible ASCII can be one.
        raise OriginProblem(400, _errors("origin_malformed", "The origin id or partner access token is malformed."))
    try:
        origin = platform.get_origin(origin_id, partner_access_token)
    except ServiceError as exc:
        status = getattr(exc, "status", None)
        http_status = 401 if status in _ORIGIN_GONE else 502
        raise OriginProblem(http_status, _service_error_body(exc)) from exc

    if origin.errors:
        errors = origin.errors if isinstance(origin.errors, list) else [origin.errors]
        raise OriginProblem(502, {"errors": errors})
    if not origin.loan:
        raise OriginProblem(404, _errors("loan_missing", LOAN_NOT_FOUND))

    product_ref = origin.product or {}
    try:
        product = product_ensure(service_id=product_ref.get("id"))
    except ProductNotFound as exc:
        message = "This product is not set up with the partner. Contact the partner's support."
        raise OriginProblem(404, _errors("product_unknown", message)) from exc
    except (ServiceError, ProductSyncError) as exc:
        raise OriginProblem(502, _service_error_body(exc)) from exc

    check = credentials_check(product=product, credentials=origin.credentials or {})
    if not check.ok:
        # The product's name lets the page say whose credentials to fix; nothing of the values.
        listing = product.listing_name or product.name
        raise OriginProblem(401, {"status": check.message, "product": listing})

    party = origin.originating_party or {}
    contact = party.get("pointOfContact") if isinstance(party.get("pointOfContact"), dict) else {}
    summary = {
        "loan": loan_summary(origin.loan),
        "product": {
            "id": product_ref.get("id") or product.service_id,
            "name": product.name,
            "listingName": product.listing_name or product_ref.get("name") or product.name,
        },
        "user": {"name": _text(contact.get("name")), "organization": _text(party.get("name"))},
        "orderOptions": order_options_schema(product.fulfiller),
    }
    return OriginContext(
        origin_id=origin.id or origin_id,
        product_service_id=product.service_id,
        product_name=product.name,
        fulfiller=product.fulfiller,
        summary=summary,
        account_id=check.account.pk if check.account else None,
        company_id=check.account.company_id if check.account else None,
    )


class TransactionNotShown(Exception):
    """The transaction is another product's or another lender's: not for this lender's page."""


def lender_may_see(*, tracker, account_id: int | None, company_id: int | None) -> bool:
    """The order's own user, or a user of the same lender company; anyone with the product's origin
    when the order was placed without partner credentials (a product that defines none)."""
    if tracker.ordered_by_id is None:
        return True
    if account_id is not None and tracker.ordered_by_id == account_id:
        return True  # the same user: no need to load the account
    return company_id is not None and tracker.ordered_by.company_id == company_id


def transaction_progress_get(
    *, transaction_id: str, product_name: str, account_id: int | None = None, company_id: int | None = None
) -> dict:
    """The tracker's view of a transaction, or the 'requested' view before the webhook has landed."""
    tracker = tracker_get(transaction_id=transaction_id)
    if tracker is not None and tracker.product_name and tracker.product_name != product_name:
        raise TransactionNotShown(transaction_id)
    if tracker is not None and not lender_may_see(tracker=tracker, account_id=account_id, company_id=company_id):
        raise TransactionNotShown(transaction_id)
    view = tracker_view(transaction_id)
    if view is None:
        # The host created it but our webhook has not arrived yet: it is requested.
        return {
            "transaction_id": transaction_id,
            "status": None,
            "step": "requested",
            "reason": "",
            "attachments": [],
            "updated_at": None,
            "finished": False,
        }
    view = dict(view)
    view["finished"] = view.get("step") in ("completed", "failed")
    view["attachments"] = [
        {"name": item.get("name"), "mime_type": item.get("mime_type"), "resource_id": item.get("resource_id")}
        for item in view.get("attachments") or []
    ]
    return view
