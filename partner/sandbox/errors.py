"""How the sandbox's writes refuse a request, with the HTTP status the views answer.

Every refusal is an `ApplicationError` whose `extra` carries the error code
(`extra["error"]`) and a list of `{"field", "message"}` (`extra["problems"]`).
"""

from partner.core.errors import ApplicationError


def refused(message: str, *, status: int = 400, problems: list | None = None, code: str = "invalid_request"):
    return ApplicationError(message, status_code=status, extra={"error": code, "problems": problems or []})
