"""The one application error type; the API exception handler turns it into JSON."""


class ApplicationError(Exception):
    """A rule of ours refused something. `message` is safe to show; `extra` holds details."""

    status_code = 400

    def __init__(self, message, *, extra=None, status_code=None):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}
        if status_code is not None:
            self.status_code = status_code
