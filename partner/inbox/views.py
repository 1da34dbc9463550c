"""POST /v1/webhooks: the service's signed notifications.

The signature is checked over the raw bytes before anything is parsed; an
accepted notification is stored before the 202 goes out. The view is outside
any request-wide transaction, so what was stored stays stored.
"""

import logging

from django.conf import settings
from django.db import DatabaseError
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.views import APIView

from partner.inbox.intake import WebhookNotANotification, WebhookSignatureInvalid, webhook_receive

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


def _too_large(request) -> bool:
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return True
    return length > settings.WEBHOOK_MAX_BYTES


def _read_body(request) -> bytes | None:
    """The raw body, or None when it is larger than WEBHOOK_MAX_BYTES (read no further than that)."""
    if _too_large(request):
        return None
    body = request.read(settings.WEBHOOK_MAX_BYTES + 1)
    return None if len(body) > settings.WEBHOOK_MAX_BYTES else body


class WebhookReceiveApi(APIView):
    authentication_classes = []
    permission_classes = []
    parser_classes = [RawBodyParser]

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
            413: MessageSerializer,
            503: MessageSerializer,
        },
    )
    def post(self, request):
        body = _read_body(request._request)
        if body is None:
            return Response({"message": "Request body too large"}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
        try:
            notification_id = webhook_receive(
                body=body,
                signature=request.headers.get(settings.SVC_SIGNATURE_HEADER),
                headers=request.headers,
                remote_addr=request.META.get("REMOTE_ADDR"),
            )
        except WebhookSignatureInvalid:
            return Response({"message": "Invalid or missing signature"}, status=status.HTTP_401_UNAUTHORIZED)
        except WebhookNotANotification as exc:
            return Response({"message": f"Not a webhook notification: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
        except DatabaseError as exc:
            # The database is away (restart, failover): nothing was stored, so say "retry later"
            # (the service redelivers on any non-2xx) rather than an unhandled 500.
            logger.warning("webhook not stored, database unavailable (%s)", type(exc).__name__)
            return Response(
                {"message": "Temporarily unavailable, retry later"},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
                headers={"Retry-After": "5"},
            )
        return Response(status=status.HTTP_202_ACCEPTED, headers={"X-Notification-Id": str(notification_id)})
