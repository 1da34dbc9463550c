"""The one application error type, and its identity: every answer an API gives for it comes from
`status_code`, `slug`, `title` and `message` (partner/core/api.py writes them in the view's shape)."""


class ApplicationError(Exception):
    """A rule of ours refused something. `message` is safe to show; `extra` holds details.

    Each kind declares its identity as class attributes: `status_code` (the HTTP status), `slug`
    (what a client branches on: the problem's `type` after its base), `title` (the slug in words)
    and, for a refusal that passes, `retry_after` (the seconds a client waits: Retry-After).
    """

    status_code = 400
    slug = "refused"
    title = "Refused"
    retry_after: int | None = None

    def __init__(self, message, *, extra=None, status_code=None):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        if status_code is not None:
            self.status_code = status_code


class Unavailable(ApplicationError):
    """Something the answer needs is down for a moment (the cache, which is the broker's Redis too):
    nothing was done; ask again after `retry_after` seconds."""

    status_code = 503
    slug = "unavailable"
    title = "Temporarily unavailable"
    retry_after = 5
