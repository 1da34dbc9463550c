"""The API's errors as `application/problem+json` (RFC 9457): type, title, status, detail, errors.

A client branches on `type`; `detail` is safe to show (our rules' messages); `errors` holds the
field errors of a request its serializer refused. The connector's views use this handler instead
of the `{"message", "extra"}` one of the other endpoints (`partner.core.api`).
"""

from http import HTTPStatus

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from partner.core.errors import ApplicationError

CONTENT_TYPE = "application/problem+json"
TYPE_BASE = "https://partner.example/problems/"
API_PREFIX = "/api/v1/"
JSON_MAX_DEPTH = 32  # nesting of a request's JSON body: our bodies need 4; deeper is refused (400)

# An order's rule refused a well-formed answer (a final already made, a file that is no document,
# an order a staff member took over): 422, whatever status the rule's error carries elsewhere.
_STATUS = {"StaffActionRefused": 422}
# exception class name -> (type slug, title)
_APPLICATION = {
    "OrderNotFound": ("order-not-found", "Order not found"),
    "TakenOver": ("taken-over", "A staff member took the order over"),
    "ProductNotFound": ("product-not-found", "Product not found"),
    "StaffActionRefused": ("answer-refused", "The answer breaks a rule of the order"),
    "IdempotencyKeyReused": ("idempotency-key-reused", "The Idempotency-Key was used with another request"),
    "IdempotencyKeyMissing": ("idempotency-key-missing", "Every POST takes an Idempotency-Key"),
    "NoConnection": ("no-connection", "The client has no connection"),
}
_DRF = [
    (exceptions.ValidationError, "invalid-request", "The request is not valid"),
    (exceptions.ParseError, "invalid-request", "The request is not valid"),
    (exceptions.NotAuthenticated, "unauthenticated", "Authentication is required"),
    (exceptions.AuthenticationFailed, "unauthenticated", "Authentication failed"),
    (exceptions.PermissionDenied, "forbidden", "The token's scope does not allow this"),
    (exceptions.NotFound, "not-found", "Not found"),
    (exceptions.MethodNotAllowed, "method-not-allowed", "Method not allowed"),
    (exceptions.UnsupportedMediaType, "unsupported-media-type", "Unsupported media type"),
    (exceptions.Throttled, "throttled", "Too many requests"),
]


def problem(*, slug: str, title: str, status: int, detail: str, errors=None, headers=None) -> Response:
    body = {"type": TYPE_BASE + slug, "title": title, "status": status, "detail": detail}
    if errors:
        body["errors"] = errors
    return Response(body, status=status, headers=headers, content_type=CONTENT_TYPE)


def too_many(seconds: int) -> JsonResponse:
    """The 429 of a view outside DRF (the token endpoint), in the same shape, with Retry-After."""
    body = {
        "type": TYPE_BASE + "throttled",
        "title": "Too many requests",
        "status": 429,
        "detail": f"Too many requests. Try again in {seconds} seconds.",
    }
    response = JsonResponse(body, status=429, content_type=CONTENT_TYPE)
    response["Retry-After"] = str(seconds)
    return response


def problem_handler(exc, context):
    if isinstance(exc, ApplicationError):
        slug, title = _APPLICATION.get(type(exc).__name__, ("refused", "Refused"))
        status = _STATUS.get(type(exc).__name__, exc.status_code)
        return problem(slug=slug, title=title, status=status, detail=exc.message, errors=exc.extra or None)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    for kind, slug, title in _DRF:
        if isinstance(exc, kind):
            headers = {}
            if getattr(exc, "auth_header", None):
                headers["WWW-Authenticate"] = exc.auth_header
            if getattr(exc, "wait", None) is not None:
                headers["Retry-After"] = str(int(exc.wait))
            if isinstance(exc, exceptions.ValidationError):
                return problem(slug=slug, title=title, status=exc.status_code, detail=title, errors=exc.detail)
            return problem(slug=slug, title=title, status=exc.status_code, detail=str(exc.detail), headers=headers)
    if isinstance(exc, exceptions.APIException):
        return problem(slug="error", title="Error", status=exc.status_code, detail=str(exc.detail))
    return None


def _depth_exceeds(data, limit: int) -> bool:
    """Whether `data` nests deeper than `limit` (walked without recursion: the depth is the sender's)."""
    pending = [(data, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


class BoundedJSONParser(JSONParser):
    """JSON bodies nested at most JSON_MAX_DEPTH deep: a deeper one is a 400 problem, never a
    RecursionError (500) in the parser or in what walks the data after it."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the body is nested too deeply.") from None
        if _depth_exceeds(data, JSON_MAX_DEPTH):
            raise exceptions.ParseError(f"JSON parse error - the body is nested deeper than {JSON_MAX_DEPTH}.")
        return data


class ProblemMiddleware:
    """Every error under /api/v1/ as a problem: the answers Django or a middleware makes outside the
    API's views (an unknown route, a body too large, too many fields, a 500) are HTML or plain text;
    here they become application/problem+json with the same status. JSON answers (the views' own
    problems, the token endpoint's OAuth errors, which RFC 6749 shapes) are left as they are."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400:
            return response
        if "json" in response.get("Content-Type", ""):
            return response
        status = HTTPStatus(response.status_code)
        body = {
            "type": TYPE_BASE + status.phrase.lower().replace(" ", "-"),
            "title": status.phrase,
            "status": status.value,
            "detail": _DETAILS.get(status.value, status.description or status.phrase) + ".",
        }
        problem_response = JsonResponse(body, status=status.value, content_type=CONTENT_TYPE)
        for header in ("Retry-After", "Allow", "WWW-Authenticate", "X-Request-ID"):
            if header in response:
                problem_response[header] = response[header]
        return problem_response


_DETAILS = {
    400: "The request is not valid",
    404: "No such route in this API (see the OpenAPI document)",
    413: "The request body is too large",
    500: "The server failed to answer; try again later",
}
