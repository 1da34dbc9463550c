"""What the lender reads when an order failed: what happened in plain words and what to do, by cause.

Only a failure in the lender's hands shows its reason (refused credentials, loan data the work
cannot use): those reasons are written for the lender. An outage of the loan platform itself is
said to be one; anything else is the partner's own trouble (our setup, an error of ours): either way
the lender reads that the partner's staff have it and that the page follows the order if they retry
it; the technical detail stays in the admin, for staff.
"""

from partner.fulfillment.orders import failures

CREDENTIALS = failures.CREDENTIALS
CREDENTIALS_MISSING = failures.CREDENTIALS_MISSING
LOAN_DATA = failures.LOAN_DATA
PLATFORM = "platform"  # the loan platform itself was unavailable: neither the lender's nor the partner's doing
PARTNER = "partner"

# The words the lender's panel uses for the credential the partner gave them (the product's credential
# titles say "User name" too): one spelling everywhere.
USER_NAME_AND_PASSWORD = "user name and password"  # noqa: S105 - words, not a secret
# What the lender does once the credentials are put right: open the page again (the page was refused),
# or order again (an order failed).
REOPEN = "close this page and open it again from the loan"
ORDER_AGAIN = "place a new order"


def failure_cause(code: str, reason: str = "") -> str:
    """credentials_missing, credentials, loan_data, platform or partner: who can put it right
    (`partner.fulfillment.orders.failures` tells the kinds apart)."""
    kind = failures.failure_kind(code, reason).kind
    if kind in failures.LENDER_KINDS:
        return kind
    return PLATFORM if kind == failures.PLATFORM_DOWN else PARTNER


def credentials_missing_explained(product: str, *, then: str = REOPEN) -> dict:
    """`{title, text, next}` when the loan application sent no credentials for the product."""
    return {
        "title": "No partner credentials are set up for this product",
        "text": f"The loan application sent no {USER_NAME_AND_PASSWORD} for {product}: none are set up for you.",
        "next": (
            f"Ask your administrator to enter the {USER_NAME_AND_PASSWORD} the partner gave you for {product} in "
            f"the loan application's settings, then {then}."
        ),
    }


def credentials_refused_explained(product: str, reason: str, *, then: str = REOPEN) -> dict:
    """`{title, text, next}` when the partner did not accept the credentials sent for the product."""
    return {
        "title": "Your partner credentials were not accepted",
        "text": reason or "The partner did not accept the credentials sent with the order.",
        "next": (
            f"Ask your administrator to correct your {USER_NAME_AND_PASSWORD} for {product} in the loan "
            f"application's settings (the ones the partner gave you), then {then}."
        ),
    }


def failure_explained(*, code: str, reason: str, reference: str, product: str = "this product") -> dict:
    """`{cause, title, text, next}` for a failed order (`reference`: the partner's, when it has one)."""
    cause = failure_cause(code, reason)
    if cause == CREDENTIALS_MISSING:
        return {"cause": cause, **credentials_missing_explained(product, then=ORDER_AGAIN)}
    if cause == CREDENTIALS:
        return {"cause": cause, **credentials_refused_explained(product, reason, then=ORDER_AGAIN)}
    if cause == LOAN_DATA:
        return {
            "cause": cause,
            "title": "The order could not be worked with this loan's data",
            "text": reason or "The partner could not use the loan data sent with the order.",
            "next": "Correct the loan in the loan application and save it, then place a new order.",
        }
    about = f", quoting {reference}" if reference else ""
    follow = (
        "You do not need to order again: this page keeps following the order and shows it if the "
        f"partner completes it. If nothing changes within a business day, contact the partner{about}."
    )
    if cause == PLATFORM:
        return {
            "cause": cause,
            "title": "The loan platform was unavailable",
            "text": (
                "The loan platform did not answer while the partner worked on the order; nothing is wrong "
                "with your loan or your credentials. The partner's staff have been told and can send the "
                "order through again once it answers."
            ),
            "next": follow,
        }
    return {
        "cause": cause,
        "title": "The partner could not complete the order",
        "text": (
            "A problem on the partner's side stopped the order; nothing is wrong with your loan or your "
            "credentials. The partner's staff have been told and can send the order through again."
        ),
        "next": follow,
    }
