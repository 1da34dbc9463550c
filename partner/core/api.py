"""The API's errors: one identity for each error, two shapes to answer it in, one DRF exception handler.

An error's identity (`ErrorAnswer`) is its status, a slug and a title a client branches on, a
detail safe to show, and its details (an `ApplicationError`'s `extra`, a request's field errors).
Each `ApplicationError` declares its own (`partner/core/errors.py`); the framework's errors (DRF's,
Django's 404 and 403 and validation errors) get theirs from `_FRAMEWORK` below. `error_answer` is
the one place that turns an error into its identity.

A view declares the shape its errors are answered in (`error_shape`, a class attribute):

- `MESSAGE`, `{"message", "extra"}` (the house shape, HackSoftware's): the `/v1/` endpoints, and
  every DRF view that declares nothing;
- `PROBLEM`, `application/problem+json` (RFC 9457: type, title, status, detail, errors): the
  connector's API under `/api/v1/`.

`exception_handler` answers what a DRF view raises in its view's shape. `ErrorShapeMiddleware`
answers in the same shape the errors made outside a view that declares one (an unknown route of its
API, a body too large, a 500), from the same identity.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http import HTTPStatus

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.urls import Resolver404, resolve
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import set_rollback

from partner.core.cache import CACHE_UNREACHABLE
from partner.core.errors import ApplicationError, Unavailable
from partner.core.retries import outage_of

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://partner.example/problems/"


@dataclass(frozen=True)
class ErrorAnswer:
    """What an error answers, whatever the shape: `detail` is safe to show; `fields` the field
    errors of a request a serializer refused, `extra` any other details (an ApplicationError's)."""

    status: int
    slug: str
    title: str
    detail: str
    extra: dict = field(default_factory=dict)
    fields: dict | list | None = None
    headers: dict[str, str] = field(default_factory=dict)


# The framework's errors: (class, slug, title), the first that matches; any other APIException is
# ("error", "Error") with its own status.
_FRAMEWORK = [
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

# The detail of an answer made outside a view, by its status (any other: the status's description).
_OUTSIDE_DETAILS = {
    400: "The request is not valid",
    404: "No such route in this API (see the OpenAPI document)",
    413: "The request body is too large",
    500: "The server failed to answer; try again later",
}
# The headers of an answer made outside a view that its shaped answer keeps.
_KEPT_HEADERS = ("Retry-After", "Allow", "WWW-Authenticate", "X-Request-ID")


def _framework_error(exc: Exception) -> exceptions.APIException | None:
    """Django's errors as DRF's (as DRF's own handler maps them)."""
    if isinstance(exc, exceptions.APIException):
        return exc
    if isinstance(exc, DjangoValidationError):
        return exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    if isinstance(exc, Http404):
        return exceptions.NotFound(*exc.args)
    if isinstance(exc, DjangoPermissionDenied):
        return exceptions.PermissionDenied(*exc.args)
    return None


def error_answer(exc: Exception) -> ErrorAnswer | None:
    """The identity of an error a view raised; None for one that is no answer (a bug: a 500)."""
    if isinstance(exc, CACHE_UNREACHABLE) or outage_of(exc) is not None:
        # One of our own services away (the cache, the database restarting): a moment's outage, not a
        # bug. An answer sent again with its Idempotency-Key is made once (partner/connector/idempotency.py).
        exc = Unavailable("The service is unavailable for a moment: nothing was done. Try again shortly.")
    if isinstance(exc, ApplicationError):
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else {}
        return ErrorAnswer(
            status=exc.status_code,
            slug=exc.slug,
            title=exc.title,
            detail=exc.message,
            extra=exc.extra,
            headers=headers,
        )
    exc = _framework_error(exc)
    if exc is None:
        return None
    slug, title = next(((s, t) for kind, s, t in _FRAMEWORK if isinstance(exc, kind)), ("error", "Error"))
    headers = {}
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header
    if getattr(exc, "wait", None) is not None:
        headers["Retry-After"] = str(int(exc.wait))
    identity = {"status": exc.status_code, "slug": slug, "title": title, "headers": headers}
    if isinstance(exc, exceptions.ValidationError):
        return ErrorAnswer(**identity, detail=title, fields=exc.detail)
    detail = exc.detail.get("detail", "") if isinstance(exc.detail, dict) else exc.detail
    return ErrorAnswer(**identity, detail=str(detail))


def status_answer(status: int) -> ErrorAnswer:
    """The identity of an answer made outside a view with `status` (Django's 404, a 413, a 500)."""
    known = HTTPStatus(status)
    detail = _OUTSIDE_DETAILS.get(status, known.description or known.phrase) + "."
    return ErrorAnswer(status=status, slug=known.phrase.lower().replace(" ", "-"), title=known.phrase, detail=detail)


@dataclass(frozen=True)
class ErrorShape:
    """How an error's identity is written: its body and the body's content type."""

    name: str
    content_type: str | None  # None: the renderer's (application/json)
    body: Callable[[ErrorAnswer], dict]

    def response(self, answer: ErrorAnswer) -> Response:
        """The DRF answer (a view's exception)."""
        return Response(self.body(answer), status=answer.status, headers=answer.headers, content_type=self.content_type)

    def json_response(self, answer: ErrorAnswer, **members) -> JsonResponse:
        """The answer outside DRF (a middleware's, a plain view's); `members` are added to the body."""
        response = JsonResponse(
            {**self.body(answer), **members},
            status=answer.status,
            content_type=self.content_type or "application/json",
        )
        for name, value in answer.headers.items():
            response[name] = value
        return response


def _message_body(answer: ErrorAnswer) -> dict:
    return {"message": answer.detail, "extra": {"fields": answer.fields} if answer.fields is not None else answer.extra}


def _problem_body(answer: ErrorAnswer) -> dict:
    body = {
        "type": PROBLEM_TYPE_BASE + answer.slug,
        "title": answer.title,
        "status": answer.status,
        "detail": answer.detail,
    }
    errors = answer.fields if answer.fields is not None else answer.extra
    if errors:
        body["errors"] = errors
    return body


MESSAGE = ErrorShape("message", None, _message_body)
PROBLEM = ErrorShape("problem", PROBLEM_CONTENT_TYPE, _problem_body)


def exception_handler(exc, context):
    """The one DRF exception handler (REST_FRAMEWORK's EXCEPTION_HANDLER): the error's identity in
    its view's shape (MESSAGE unless the view declares another); None lets a bug be a 500."""
    answer = error_answer(exc)
    if answer is None:
        return None
    set_rollback()
    return getattr(context.get("view"), "error_shape", MESSAGE).response(answer)


def declared_shape(request) -> ErrorShape | None:
    """The error shape the view of `request`'s path declares; None when it declares none, or no
    view answers the path."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        try:
            match = resolve(request.path_info, getattr(request, "urlconf", None))
        except Resolver404:
            return None
    view = getattr(match.func, "view_class", None) or getattr(match.func, "cls", None)
    return getattr(view, "error_shape", None)


class ErrorShapeMiddleware:
    """The errors made outside a view (an unknown route, a body too large, too many fields, a 500:
    Django's HTML or plain text) in the shape the path's view declares, with the same status. JSON
    answers (the views' own, the token endpoint's OAuth errors, which RFC 6749 shapes) are left as
    they are, and so is every path whose view declares no shape. (No view hooks: the webhook's own
    handler, partner/inbox/webhook_wsgi.py, runs this middleware and calls none.)"""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code < 400 or "json" in response.get("Content-Type", ""):
            return response
        shape = declared_shape(request)
        if shape is None:
            return response
        answer = status_answer(response.status_code)
        kept = {name: response[name] for name in _KEPT_HEADERS if name in response}
        return shape.json_response(replace(answer, headers=kept))
