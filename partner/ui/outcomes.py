"""What the lender reads when an order failed: what happened in plain words and what to do, by cause.

Only a failure in the lender's hands shows its reason (refused credentials, loan data the work
cannot use): those reasons are written for the lender. Anything else is the partner's own trouble
(an outage of the service, our setup, retries that ran out): the lender reads that the partner's
staff have it and that the page follows the order if they retry it; the technical detail stays in
the admin, for staff.
"""

from partner.fulfillment.models import FailureCode

CREDENTIALS = "credentials"
LOAN_DATA = "loan_data"
PARTNER = "partner"

_CAUSES = {
    FailureCode.CREDENTIALS_INVALID: CREDENTIALS,
    FailureCode.ORDER_REFUSED: LOAN_DATA,
}


def failure_cause(code: str) -> str:
    """credentials, loan_data or partner: who can put it right."""
    return _CAUSES.get(code, PARTNER)


def failure_explained(*, code: str, reason: str, reference: str) -> dict:
    """`{cause, title, text, next}` for a failed order (`reference`: the partner's, when it has one)."""
    cause = failure_cause(code)
    if cause == CREDENTIALS:
        return {
            "cause": cause,
            "title": "Your partner credentials were not accepted",
            "text": reason or "The partner did not accept the credentials sent with the order.",
            "next": (
                "Ask your administrator to correct your credentials for this partner's product in the loan "
                "application's settings (the user name and password the partner gave you), then place a new order."
            ),
        }
    if cause == LOAN_DATA:
        return {
            "cause": cause,
            "title": "The order could not be worked with this loan's data",
            "text": reason or "The partner could not use the loan data sent with the order.",
            "next": "Correct the loan in the loan application and save it, then place a new order.",
        }
    about = f" Quote {reference} if you contact the partner." if reference else ""
    return {
        "cause": cause,
        "title": "The partner could not complete the order",
        "text": (
            "A problem on the partner's side stopped the order; nothing is wrong with your loan or your "
            "credentials. The partner's staff have been told and can send the order through again."
        ),
        "next": (
            "You do not need to order again: this page keeps following the order and shows it if the "
            f"partner completes it. If nothing changes within a business day, contact the partner.{about}"
        ),
    }
