"""What the embedded UI refuses, each an application error.

`message` is safe to show the lender; `status_code` is the answer's status and `extra` its JSON
body, which the UI's views answer as it is: the page and the host read `{"errors": [{status, code,
message}]}` (or, for credentials the service refused, `{"status", "product"}`), not the API's
`{"message", "extra"}`.
"""

from partner.core.errors import ApplicationError


def errors_body(code: str, message: str, status: int | None = None) -> dict:
    """`{"errors": [{status, code, message}]}`: `status` is the service's, when it answered."""
    return {"errors": [{"status": status, "code": code, "message": message}]}


class UiRefused(ApplicationError):
    """The page or the origin proxy is refused what it asked: answered `extra` with `status_code`."""

    @classmethod
    def coded(cls, status_code: int, code: str, message: str, *, status: int | None = None) -> "UiRefused":
        """The refusal whose body is `errors_body(code, message, status)`."""
        return cls(message, extra=errors_body(code, message, status), status_code=status_code)


class OriginProblem(UiRefused):
    """The origin cannot be shown: missing, malformed, refused or expired at the service, its loan or
    product unknown, or the lender's credentials refused."""


class PanelSessionInvalid(UiRefused):
    """The panel session is missing, forged, made for something else or expired: renew the origin.

    Answered 401 `panel_session_expired` whatever the reason; `reason` says which, for whoever debugs.
    """

    status_code = 401
    MESSAGE = "The page's session has ended: renew the origin and ask again."

    def __init__(self, reason: str):
        super().__init__(self.MESSAGE, extra=errors_body("panel_session_expired", self.MESSAGE))
        self.reason = reason


class TransactionNotShown(UiRefused):
    """The transaction is another product's, lender's or loan's: not for this lender's page (404)."""

    status_code = 404
    MESSAGE = "No such order for this product."

    def __init__(self):
        super().__init__(self.MESSAGE, extra=errors_body("transaction_unknown", self.MESSAGE))


class DocumentNotShown(UiRefused):
    """No such document of this order for the lender: another order's or lender's, not delivered, or
    purged. One answer (404) whichever the reason."""

    status_code = 404
    MESSAGE = "No such document for this order."

    def __init__(self):
        super().__init__(self.MESSAGE, extra=errors_body("document_unknown", self.MESSAGE))
