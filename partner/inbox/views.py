"""POST /v1/webhooks: the service's signed notifications, answered by one view.

`webhook_receive_view` is the endpoint wherever a request comes from: gunicorn and runserver
(`config.wsgi`), the test client, a live server, ASGI. It reads the raw bytes (a chunked body up to
the same limit as any other), has `intake.webhook_receive` verify and store them, and answers 202
once the row is stored. It is a plain Django view, not a DRF one: a webhook needs no content
negotiation, parser or authentication class, and the intake's CPU per webhook is what the service's
delivery rate presses on (bench/README.md). It runs outside any request-wide transaction, so what
was stored stays stored.

Under `config.wsgi` it runs behind only the middleware that has work to do for a webhook
(`partner/inbox/webhook_wsgi.py`). `WebhookReceiveApi` documents it in the API schema and gives any
other method DRF's answers (405, OPTIONS), as every API view of ours does.
"""

import json
import logging

from django.conf import settings
from django.db import DatabaseError, transaction
from django.http import HttpResponse
from django.http.request import HttpHeaders
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import BaseParser
from rest_framework.views import APIView

from partner.inbox.errors import WebhookBodyRefused, WebhookRefused
from partner.inbox.intake import webhook_receive
from partner.inbox.metrics import WEBHOOKS

logger = logging.getLogger(__name__)


class RawBodyParser(BaseParser):
    """Accept any content type: the view reads the raw bytes itself."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None


class _Meta(serializers.Serializer):
    resourceType = serializers.CharField(max_length=200, help_text="A URN, e.g. <prefix>:<platform>:transaction")
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
            raise WebhookBodyRefused("Request body too large", status_code=413)
        return request
    if environ.get("wsgi.input_terminated"):
        return environ["wsgi.input"]
    if request.META.get("HTTP_TRANSFER_ENCODING"):
        raise WebhookBodyRefused("A Content-Length is required", status_code=411)
    return request  # no body at all


def _read_body(request) -> bytes:
    """The raw body, read no further than WEBHOOK_MAX_BYTES and one byte (to tell a larger one: 413)."""
    body = _read_at_most(_body_stream(request), settings.WEBHOOK_MAX_BYTES + 1)
    if len(body) > settings.WEBHOOK_MAX_BYTES:
        raise WebhookBodyRefused("Request body too large", status_code=413)
    return body


# Every answer of the endpoint carries these, as it has since it was a DRF view.
_ENDPOINT_HEADERS = {"Allow": "POST, OPTIONS", "Vary": "Accept"}


def _answer(status: int, message: str | None = None, **headers: str) -> HttpResponse:
    """An answer: no body (and no Content-Type) without a message, else `{"message": ...}`, compact UTF-8 JSON."""
    if message is None:
        response = HttpResponse(status=status, headers={**_ENDPOINT_HEADERS, **headers})
        del response["Content-Type"]
        return response
    content = json.dumps({"message": message}, ensure_ascii=False, separators=(",", ":")).encode()
    return HttpResponse(
        content, status=status, content_type="application/json", headers={**_ENDPOINT_HEADERS, **headers}
    )


# A META key's header name (Django's `request.headers` naming), or None: the keys repeat from one webhook to the next.
_header_names: dict[str, str | None] = {}
_HEADER_NAMES_KEPT = 4096
_UNSEEN = object()


def _request_headers(meta) -> dict[str, str]:
    """The request's headers by name, as `request.headers` has them, in a plain dict.

    `request.headers` is a case-insensitive mapping built from META on first use, and read item by
    item through the generic mapping code: on the webhook's path the two cost more than the rest of
    the view's own work (docs/performance.md)."""
    headers = {}
    for key, value in meta.items():
        name = _header_names.get(key, _UNSEEN)
        if name is _UNSEEN:
            name = HttpHeaders.parse_header_name(key)
            if len(_header_names) >= _HEADER_NAMES_KEPT:  # names are the sender's: keep a bounded set
                _header_names.clear()
            _header_names[key] = name
        if name:
            headers[name] = value
    return headers


def _webhook_answer(request) -> HttpResponse:
    """Read, verify and store one webhook (`webhook_receive`); its answer: 202, 503, or a refusal's
    (`partner.inbox.errors`: 400, 401, 411, 413)."""
    meta = request.META
    try:
        notification_id = webhook_receive(
            body=_read_body(request),
            signature=meta.get(HttpHeaders.to_wsgi_name(settings.SVC_SIGNATURE_HEADER)),
            headers=_request_headers(meta),
            remote_addr=meta.get("REMOTE_ADDR"),
        )
    except WebhookRefused as refused:
        return _answer(refused.status_code, refused.message)
    except DatabaseError as exc:
        # The database is away (restart, failover): nothing was stored, so say "retry later"
        # (the service redelivers on any non-2xx) rather than an unhandled 500.
        logger.warning("webhook not stored, database unavailable (%s)", type(exc).__name__)
        return _answer(503, "Temporarily unavailable, retry later", **{"Retry-After": "5"})
    return _answer(202, **{"X-Notification-Id": str(notification_id)})


class WebhookReceiveApi(APIView):
    """POST /v1/webhooks in the API schema; `webhook_receive_view` answers the webhook."""

    authentication_classes = []
    permission_classes = []
    parser_classes = [RawBodyParser]

    # On the method, not the class: an operation_id on an APIView class breaks the schema (drf-spectacular).
    @extend_schema(
        operation_id="webhook_receive",
        # The service posts JSON; the view reads the raw bytes whatever the type says (typed here, so
        # that clients generated from the document know what to send).
        request={"application/json": NotificationSerializer},
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
        return webhook_receive_view(request._request)


# DRF's answers to any other method than POST (405 in our error shape; OPTIONS).
_other_methods = WebhookReceiveApi.as_view()
# The answers counted by status, one counter per status (looking one up is not free).
_counted: dict[int, object] = {}


@csrf_exempt  # a server-to-server POST, signed by HMAC
@transaction.non_atomic_requests  # a stored notification must survive any later error
def webhook_receive_view(request) -> HttpResponse:
    """The endpoint: a POST read, verified, stored and answered; any other method answered by DRF."""
    response = _webhook_answer(request) if request.method == "POST" else _other_methods(request)
    counter = _counted.get(response.status_code)
    if counter is None:
        counter = _counted[response.status_code] = WEBHOOKS.labels(str(response.status_code))
    counter.inc()
    return response


# drf-spectacular documents the views whose callback names an APIView class: this one's is WebhookReceiveApi.
webhook_receive_view.cls = WebhookReceiveApi
webhook_receive_view.initkwargs = {}
