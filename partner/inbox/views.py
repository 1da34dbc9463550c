"""POST /v1/webhooks: the service's signed notifications.

The signature is checked over the raw bytes before anything is parsed; an
accepted notification is stored before the 202 goes out. A chunked body (no
Content-Length) is read up to the same limit as any other. The view is outside
any request-wide transaction, so what was stored stays stored.

`webhook_answer` decides every answer (`WebhookAnswer`). Under WSGI (gunicorn, runserver)
`POST /v1/webhooks` reaches it through the lean path of `partner/inbox/webhook_wsgi.py`, past the
middleware and the content negotiation it does not need; `WebhookReceiveApi` (the URL map: ASGI,
the test client, the API schema) answers through the same function.
"""

import json
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.views import APIView

from partner.inbox.intake import WebhookNotANotification, WebhookSignatureInvalid, webhook_receive
from partner.inbox.metrics import WEBHOOKS

logger = logging.getLogger(__name__)


class RawBodyParser(BaseParser):
    """Accept any content type: the view reads the raw bytes itself."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


class _Meta(serializers.Serializer):
    resourceType = serializers.CharField(max_length=200, help_text="A URN, e.g. urn:svc:platform:transaction")
    resourceId = serializers.CharField(max_length=200)
    instanceId = serializers.CharField(max_length=200, required=False, help_text="The product's name")
    resourceRef = serializers.CharField(
        max_length=2000,
        required=False,
        help_text="The resource's address on the service; checked to be on the service before it is read",
    )


class NotificationSerializer(serializers.Serializer):
    """Documents the body (`notifications.notification_parse` reads it; a test holds the two to the same rules)."""

    eventId = serializers.CharField(max_length=200, required=False)
    eventTime = serializers.DateTimeField()
    eventType = serializers.CharField(max_length=100)
    meta = _Meta()


class MessageSerializer(serializers.Serializer):
    message = serializers.CharField()


class WebhookBodyRefused(Exception):
    """The body cannot be read: `status` (411, 413) and `message` are the answer."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _read_at_most(stream, size: int) -> bytes:
    """Up to `size` bytes of `stream`, fewer only at its end."""
    parts, left = [], size
    while left > 0:
        part = stream.read(left)
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


@dataclass(frozen=True)
class WebhookAnswer:
    """What a webhook is answered: a status, the message of a JSON body (none: no body) and headers."""

    status: int
    message: str | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def content(self) -> bytes:
        """`{"message": ...}` as DRF's renderer writes it (compact, UTF-8); nothing for an answer without a message."""
        if self.message is None:
            return b""
        return json.dumps({"message": self.message}, ensure_ascii=False, separators=(",", ":")).encode()

    @property
    def content_type(self) -> str | None:
        return None if self.message is None else "application/json"


def webhook_response(answer: WebhookAnswer) -> HttpResponse:
    """The answer as a Django response (no Content-Type without a body, as DRF answered it)."""
    response = HttpResponse(answer.content, status=answer.status, headers=dict(answer.headers))
    if answer.content_type is None:
        del response["Content-Type"]
    else:
        response["Content-Type"] = answer.content_type
    return response


def _body_stream(request):
    """Where the body is read from: Django's request, or the server's own stream for a body without a length.

    Django's WSGI request reads nothing of a body without Content-Length (Transfer-Encoding:
    chunked), so a signed webhook would be checked as empty. The server's stream is read instead
    where the server says it ends with the body (`wsgi.input_terminated`: gunicorn decodes the
    chunks); a server that does not (Django's runserver) cannot hand the body over: 411.
    """
    length = request.META.get("CONTENT_LENGTH")
    environ = getattr(request, "environ", None)  # WSGI; an ASGI request holds the whole body already
    if length or environ is None or "wsgi.input" not in environ:
        try:
            too_large = int(length or 0) > settings.WEBHOOK_MAX_BYTES
        except ValueError:
            too_large = True
        if too_large:
            raise WebhookBodyRefused(413, "Request body too large")
        return request
    if environ.get("wsgi.input_terminated"):
        return environ["wsgi.input"]
    if request.META.get("HTTP_TRANSFER_ENCODING"):
        raise WebhookBodyRefused(411, "A Content-Length is required")
    return request  # no body at all


def _read_body(request) -> bytes:
    """The raw body, read no further than WEBHOOK_MAX_BYTES and one byte (to tell a larger one: 413)."""
    body = _read_at_most(_body_stream(request), settings.WEBHOOK_MAX_BYTES + 1)
    if len(body) > settings.WEBHOOK_MAX_BYTES:
        raise WebhookBodyRefused(413, "Request body too large")
    return body


def webhook_answer(request) -> WebhookAnswer:
    """Read, verify and store one webhook (`webhook_receive`); its answer: 202, 400, 401, 411, 413 or 503."""
    try:
        body = _read_body(request)
    except WebhookBodyRefused as refused:
        return WebhookAnswer(refused.status, refused.message)
    try:
        notification_id = webhook_receive(
            body=body,
            signature=request.headers.get(settings.SVC_SIGNATURE_HEADER),
            headers=request.headers,
            remote_addr=request.META.get("REMOTE_ADDR"),
        )
    except WebhookSignatureInvalid:
        return WebhookAnswer(401, "Invalid or missing signature")
    except WebhookNotANotification as exc:
        return WebhookAnswer(400, f"Not a webhook notification: {exc}")
    except DatabaseError as exc:
        # The database is away (restart, failover): nothing was stored, so say "retry later"
        # (the service redelivers on any non-2xx) rather than an unhandled 500.
        logger.warning("webhook not stored, database unavailable (%s)", type(exc).__name__)
        return WebhookAnswer(503, "Temporarily unavailable, retry later", (("Retry-After", "5"),))
    return WebhookAnswer(202, headers=(("X-Notification-Id", str(notification_id)),))


class WebhookReceiveApi(APIView):
    """The webhook as the URL map serves it (ASGI, the test client) and the API schema documents it."""

    authentication_classes = []
    permission_classes = []
    parser_classes = [RawBodyParser]

    def finalize_response(self, request, response, *args, **kwargs):
        WEBHOOKS.labels(str(response.status_code)).inc()  # every answer, whichever branch gave it
        return super().finalize_response(request, response, *args, **kwargs)

    # On the method, not the class: an operation_id on an APIView class breaks the schema (drf-spectacular).
    @extend_schema(
        operation_id="webhook_receive",
        request=NotificationSerializer,
        parameters=[
            OpenApiParameter(
                name=settings.SVC_SIGNATURE_HEADER,
                location=OpenApiParameter.HEADER,
                required=True,
                description="Base64 of HMAC-SHA256 over the raw body with the product's signing secret.",
            )
        ],
        responses={
            202: OpenApiResponse(description="Accepted (also a duplicate delivery or an event we ignore)"),
            400: MessageSerializer,
            401: MessageSerializer,
            411: MessageSerializer,
            413: MessageSerializer,
            503: MessageSerializer,
        },
    )
    def post(self, request):
        return webhook_response(webhook_answer(request._request))
