"""The embedded UI's one service: turn the origin the host handed the page into what it may show.

`origin_context_fetch` calls the service: it reads the origin (endpoint #1), makes sure we
know the product (pulling it from the service when we do not, which writes it), checks the
lender's credentials with the catalog's check (which records when they last passed), and keeps
only a summary (never the credentials, never the whole loan). Every UI endpoint that shows
lender data goes through it, so only the lender in the host, holding a live origin, can read
anything.
"""

import re
from dataclasses import dataclass, field

from partner.catalog.credentials import credentials_check
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.catalog.services import product_ensure
from partner.platform import client as platform
from partner.platform.errors import RequestRefused, ServiceError
from partner.ui.errors import OriginProblem
from partner.ui.forms import order_options_schema
from partner.ui.loans import loan_summary, text
from partner.ui.outcomes import credentials_missing_explained, credentials_refused_explained

LOAN_NOT_FOUND = "loan object was not found"

# Statuses of endpoint #1 that mean "this origin id / token is no longer good":
# the page renews the origin through the host and asks again.
_ORIGIN_GONE = {401, 403, 404, 410}


_TOKEN_SHAPE = re.compile(r"[\x21-\x7e]{1,4096}")


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
    loan_number: str = ""


def _service_problem(exc, status_code: int) -> OriginProblem:
    """The origin proxy's answer to a failed call (`exc`: a ServiceError, or the catalog's error around one)."""
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
    return OriginProblem.coded(status_code, code, message, status=status)


def _summary(origin, product, *, loan: dict) -> dict:
    """What the page shows of the origin: the loan, the product with its terms, the user, the form."""
    product_ref = origin.product or {}
    party = origin.originating_party or {}
    contact = party.get("pointOfContact") if isinstance(party.get("pointOfContact"), dict) else {}
    return {
        "loan": loan,
        "product": {
            "id": product_ref.get("id") or product.service_id,
            "name": product.name,
            "listingName": product.listing_name or product_ref.get("name") or product.name,
            # What staff set for the order form: the price of one order and the expected turnaround.
            "fee": f"{product.fee:.2f}" if product.fee is not None else None,
            "turnaroundHours": product.turnaround_hours,
        },
        "user": {"name": text(contact.get("name")), "organization": text(party.get("name"))},
        "orderOptions": order_options_schema(product.fulfiller),
    }


def origin_context_fetch(*, origin_id: str, partner_access_token: str) -> OriginContext:
    """Read and check the origin; raise OriginProblem with the proxy's answer when it cannot be shown."""
    if not origin_id or not partner_access_token:
        message = "An origin id and partner access token are required."
        raise OriginProblem.coded(400, "origin_missing", message)
    if not _TOKEN_SHAPE.fullmatch(partner_access_token) or not platform.path_id_valid(origin_id):
        # The token travels on as an HTTP header: only visible ASCII can be one. The id goes into the
        # service's path: only a plain id (never "..", "/" or "%") may, or our tokens go to another address.
        raise OriginProblem.coded(400, "origin_malformed", "The origin id or partner access token is malformed.")
    try:
        origin = platform.get_origin(origin_id, partner_access_token)
    except (ServiceError, RequestRefused) as exc:  # RequestRefused: a misconfigured address, nothing sent
        raise _service_problem(exc, 401 if exc.status in _ORIGIN_GONE else 502) from exc

    if origin.errors:
        # The service's own errors, passed on as it gave them.
        errors = origin.errors if isinstance(origin.errors, list) else [origin.errors]
        raise OriginProblem("The service answered the origin with errors.", extra={"errors": errors}, status_code=502)
    if not origin.loan:
        raise OriginProblem.coded(404, "loan_missing", LOAN_NOT_FOUND)

    product_ref = origin.product or {}
    try:
        product = product_ensure(service_id=product_ref.get("id"))
    except ProductNotFound as exc:
        message = "This product is not set up with the partner. Contact the partner's support."
        raise OriginProblem.coded(404, "product_unknown", message) from exc
    except (ServiceError, ProductSyncError) as exc:
        raise _service_problem(exc, 502) from exc

    check = credentials_check(product=product, credentials=origin.credentials or {})
    if not check.ok:
        # The product's name lets the page say whose credentials to fix; nothing of the values.
        # `missing`: none were sent (a setup to make, not a value to correct): explained on its own.
        listing = product.listing_name or product.name
        if check.missing:
            explained = credentials_missing_explained(listing)
        else:
            explained = credentials_refused_explained(listing, check.message)
        body = {"status": check.message, "product": listing, "missing": check.missing, **explained}
        raise OriginProblem(check.message, extra=body, status_code=401)

    loan = loan_summary(origin.loan)
    summary = _summary(origin, product, loan=loan)
    return OriginContext(
        origin_id=origin.id or origin_id,
        product_service_id=product.service_id,
        product_name=product.name,
        fulfiller=product.fulfiller,
        summary=summary,
        account_id=check.account.pk if check.account else None,
        company_id=check.account.company_id if check.account else None,
        loan_number=loan["loanNumber"],
    )
