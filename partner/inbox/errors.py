"""The refusals of POST /v1/webhooks, each an application error.

`message` and `status_code` are the endpoint's answer (`{"message": ...}` with that status; the
view writes it, `views._answer`); `extra` holds details for the code that reads them. Nothing of a
refused webhook is processed. A duplicate, an ignored event and a stored one are not refusals
(202), nor is a database away (503: nothing was judged, the service should send it again).
"""

from partner.core.errors import ApplicationError


class WebhookRefused(ApplicationError):
    """A webhook the endpoint refuses: answered `status_code` with `{"message": message}`."""


class WebhookBodyRefused(WebhookRefused):
    """The body cannot be read: too large (413) or of a length the server cannot tell (411)."""


class WebhookSignatureInvalid(WebhookRefused):
    """The signature header is missing or does not match any accepted secret."""

    status_code = 401

    def __init__(self, message: str = "Invalid or missing signature", **kwargs):
        super().__init__(message, **kwargs)


class WebhookSignerMismatch(WebhookSignatureInvalid):
    """Signed with a product's own secret, but the notification names another product (answered as
    any invalid signature; the notification is kept as `refused` for staff)."""


class NotANotification(WebhookRefused):
    """Signed correctly, but not a webhook notification: `extra["reason"]` says what is wrong with it."""

    status_code = 400

    def __init__(self, reason: str):
        super().__init__(f"Not a webhook notification: {reason}", extra={"reason": reason})
