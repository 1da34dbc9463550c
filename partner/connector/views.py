"""The connector's API under /api/v1/: a partner system reads its orders and events and answers its
orders. Thin views: authenticate (OAuth 2.0 client credentials, a scope per view), validate with a
serializer, call one service (`answers`), under an Idempotency-Key for every POST."""

import base64
import binascii
import json
from urllib.parse import unquote_plus

from django.conf import settings
from django.http import HttpRequest
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from oauth2_provider.contrib.rest_framework import OAuth2Authentication, TokenHasScope
from oauth2_provider.views import RevokeTokenView, TokenView
from rest_framework import exceptions, serializers
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from partner.catalog.errors import ProductNotFound
from partner.connector import answers
from partner.connector.idempotency import answer_once, fingerprint
from partner.connector.models import Connection
from partner.connector.parsers import BoundedJSONParser
from partner.connector.selectors import FEED_PAGE, connection_orders, connection_products
from partner.connector.serializers import (
    AcknowledgeIn,
    DeclineIn,
    DeliverIn,
    DeliveryOut,
    DocumentIn,
    DocumentOut,
    EventOut,
    EventPageOut,
    OrderOut,
    OrderSummaryOut,
    ProductOut,
    StatusUpdateIn,
    StrictInteger,
    StrictQuery,
)
from partner.connector.services import events_feed
from partner.core.api import PROBLEM, PROBLEM_CONTENT_TYPE, error_answer
from partner.core.errors import ApplicationError
from partner.core.ratelimits import request_counted
from partner.fulfillment.models import OrderStatus

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=True,
    description="Unique per answer: a retry with the same key and body gets the first answer and changes nothing.",
)
PROBLEM_BODY = inline_serializer(
    "Problem",
    {
        "type": serializers.CharField(),
        "title": serializers.CharField(),
        "status": serializers.IntegerField(),
        "detail": serializers.CharField(),
        "errors": serializers.JSONField(required=False),
    },
)
# Every error is application/problem+json (partner/core/api.py).
ERRORS = {(code, PROBLEM_CONTENT_TYPE): PROBLEM_BODY for code in (400, 401, 403, 404, 422, 429)}


class NoConnection(ApplicationError):
    """The token's client is not the client of a connection."""

    status_code = 403
    slug = "no-connection"
    title = "The client has no connection"


class TokenIn(serializers.Serializer):
    grant_type = serializers.ChoiceField(choices=["client_credentials"], help_text="Client credentials only.")
    scope = serializers.CharField(required=False, help_text="Space-separated: `read`, `answer` (left out: both).")
    client_id = serializers.CharField(required=False, help_text="Or in HTTP Basic authentication (preferred).")
    client_secret = serializers.CharField(required=False, help_text="Or in HTTP Basic authentication (preferred).")


class TokenOut(serializers.Serializer):
    access_token = serializers.CharField(help_text="Send it as `Authorization: Bearer …`.")
    token_type = serializers.CharField(help_text="Bearer")
    expires_in = serializers.IntegerField(help_text="Seconds it lives (CONNECTOR_TOKEN_SECONDS).")
    scope = serializers.CharField()


TOKEN_PROBLEM = inline_serializer(
    "TokenProblem",
    {
        "type": serializers.CharField(),
        "title": serializers.CharField(),
        "status": serializers.IntegerField(),
        "detail": serializers.CharField(),
        "error": serializers.CharField(required=False, help_text="The OAuth 2.0 error code (RFC 6749 §5.2)."),
        "error_description": serializers.CharField(required=False),
    },
)


def token_client_id(request) -> str:
    """The client id a token request names (HTTP Basic, else the form), as sent; empty if none."""
    kind, _, value = request.headers.get("Authorization", "").partition(" ")
    if kind.lower() == "basic":
        try:
            return unquote_plus(base64.b64decode(value, validate=True).decode("utf-8").partition(":")[0])
        except (binascii.Error, UnicodeDecodeError):
            return ""
    return request.POST.get("client_id", "") if request.method == "POST" else ""


class TokenThrottle(BaseThrottle):
    """RATELIMIT_API_TOKEN token requests per client address (an IPv6 client per /64), and as many per
    client id from whatever addresses (guesses at one client's secret spread over many addresses are
    held back too), whatever the secret; past either, 429 with Retry-After. Counted before any
    secret is checked: a refused request costs no hash. It guards the secrets, so with the cache
    unreachable it refuses: 503 (`partner.core.ratelimits`)."""

    def allow_request(self, request, view) -> bool:
        self.seconds = request_counted(request, group="connector-token", rate=settings.RATELIMIT_API_TOKEN)
        client_id = token_client_id(request)[:200]
        if self.seconds is None and client_id:
            self.seconds = request_counted(
                request,
                group="connector-token:client",
                rate=settings.RATELIMIT_API_TOKEN,
                key=lambda _group, _request: client_id,
            )
        return self.seconds is None

    def wait(self) -> float | None:
        return self.seconds


class TokenApi(APIView):
    """POST /api/v1/oauth/token: django-oauth-toolkit issues the token (client credentials); a
    refusal is problem+json like every error of the API, still carrying RFC 6749's `error` and
    `error_description`, so OAuth client libraries read it as they expect."""

    authentication_classes = []
    permission_classes = []
    throttle_classes = [TokenThrottle]
    renderer_classes = [JSONRenderer]
    error_shape = PROBLEM
    _issue = staticmethod(TokenView.as_view())

    @extend_schema(
        operation_id="oauth_token",
        auth=[{"clientBasic": []}, {}],
        request={"application/x-www-form-urlencoded": TokenIn},
        responses={
            200: TokenOut,
            **{(code, PROBLEM_CONTENT_TYPE): TOKEN_PROBLEM for code in (400, 401, 429, 503)},
        },
    )
    def post(self, request):
        return token_problem(self._issue(request._request))


class RevokeIn(serializers.Serializer):
    token = serializers.CharField(help_text="The access token to revoke.")
    token_type_hint = serializers.ChoiceField(choices=["access_token"], required=False)


class TokenRevokeApi(TokenApi):
    """POST /api/v1/oauth/revoke (RFC 7009): a system revokes one of its own access tokens (a leaked
    one, or one it is done with), authenticated as for a token. django-oauth-toolkit revokes it;
    200 whether or not the token existed (RFC 7009 §2.2: a token of another client, or none, is
    not told apart), a refused client as problem+json."""

    _issue = staticmethod(RevokeTokenView.as_view())

    @extend_schema(
        operation_id="oauth_revoke",
        auth=[{"clientBasic": []}, {}],
        request={"application/x-www-form-urlencoded": RevokeIn},
        responses={
            200: None,
            **{(code, PROBLEM_CONTENT_TYPE): TOKEN_PROBLEM for code in (400, 401, 429, 503)},
        },
    )
    def post(self, request):
        return token_problem(self._issue(request._request))


class TokenRefused(ApplicationError):
    """The token endpoint refused a request (the toolkit's answer, as a problem with OAuth's members)."""

    slug = "token-refused"
    title = "The token request was refused"


def token_problem(response):
    """The toolkit's answer, its refusals as problem+json (keeping `error` and `error_description`)."""
    if response.status_code < 400:
        return response
    try:
        body = json.loads(response.content or b"{}")
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    error = str(body.get("error") or "invalid_request")
    status = 401 if error == "invalid_client" else 400
    oauth = {
        "error": error,
        **({"error_description": body["error_description"]} if body.get("error_description") else {}),
    }
    refusal = TokenRefused(TOKEN_ERRORS.get(error, "The token request was refused."), status_code=status)
    answer = PROBLEM.json_response(error_answer(refusal), **oauth)
    for header in ("WWW-Authenticate", "Cache-Control", "Pragma"):
        if header in response:
            answer[header] = response[header]
    if status == 401 and "WWW-Authenticate" not in answer:
        answer["WWW-Authenticate"] = 'Basic realm="api"'
    return answer


TOKEN_ERRORS = {
    "invalid_client": "The client id or secret is wrong.",
    "unsupported_grant_type": "Only grant_type=client_credentials is accepted.",
    "unauthorized_client": "This client may use the client credentials grant only.",
    "invalid_scope": "The scope asked for is unknown: ask for read, answer or both.",
    "invalid_request": "The token request is malformed (grant_type=client_credentials, form-encoded).",
}


token_view = TokenApi.as_view()
revoke_view = TokenRevokeApi.as_view()  # the token endpoint's counts (TokenThrottle): a secret is checked there too


class ClientThrottle(BaseThrottle):
    """RATELIMIT_API requests per OAuth client, counted in the shared cache as every rate limit is
    (`partner.core.ratelimits`); past it, 429 with Retry-After. Checked after the token: a request
    without one is refused (401) before it counts."""

    def allow_request(self, request, view) -> bool:
        client = getattr(request.auth, "application_id", None)

        def key(_group, _request):
            return f"client:{client}"

        self.seconds = request_counted(
            request, group="connector-api", rate=settings.RATELIMIT_API, key=key, fail_open=True
        )
        return self.seconds is None

    def wait(self) -> float | None:
        return self.seconds


class ConnectorApi(APIView):
    authentication_classes = [OAuth2Authentication]
    permission_classes = [TokenHasScope]
    throttle_classes = [ClientThrottle]
    renderer_classes = [JSONRenderer]
    required_scopes = ["read"]
    error_shape = PROBLEM

    def permission_denied(self, request, message=None, code=None):
        """A request without a valid token counts per address (RATELIMIT_API_TOKEN, as the token
        endpoint's guesses do), never against a client's own count: past it, 429 instead of 401."""
        if request.successful_authenticator is None:
            seconds = request_counted(
                request, group="connector-untokened", rate=settings.RATELIMIT_API_TOKEN, fail_open=True
            )
            if seconds is not None:
                raise exceptions.Throttled(wait=seconds)
        super().permission_denied(request, message=message, code=code)

    def connection(self) -> Connection:
        application = getattr(self.request.auth, "application", None)
        connection = Connection.objects.select_related("user").filter(application=application).first()
        if application is None or connection is None:
            raise NoConnection("This client is not the client of a connection.")
        return connection


class AnswerApi(ConnectorApi):
    """A POST that answers an order: validated, then made once per Idempotency-Key."""

    required_scopes = ["answer"]
    parser_classes = [BoundedJSONParser]
    answer_in: type[serializers.Serializer]

    def answer(self, connection: Connection, order_id: str, data: dict) -> tuple[int, dict]:
        """Make the answer: its status and the ids of what it made (`answer_body` renders them)."""
        raise NotImplementedError

    def post(self, request: HttpRequest, order_id: str):
        connection = self.connection()
        incoming = self.answer_in(data=request.data)
        incoming.is_valid(raise_exception=True)
        status, made = answer_once(
            connection=connection,
            key=request.headers.get("Idempotency-Key", ""),
            request_fingerprint=fingerprint(
                method="POST", path=request.path, data=request.data, files=getattr(request, "FILES", {})
            ),
            run=lambda: self.answer(connection, order_id, incoming.validated_data),
        )
        return Response(answer_body(connection, made), status=status)


def answer_body(connection: Connection, made: dict) -> dict:
    """The answer's body, rendered from what the answer made (`{"order", "delivery"}` ids, or
    `{"document"}`), the first time and on each replay alike: the idempotent answer keeps those ids,
    never the order (which grows with every answer). A replay shows the order as it stands now."""
    if "document" in made:
        return DocumentOut(answers.document_of(connection=connection, document_id=made["document"])).data
    order = answers.order_of(connection=connection, order_id=made["order"])
    if "delivery" not in made:
        return OrderOut(order).data
    return {"order": OrderOut(order).data, "delivery": DeliveryOut(order.deliveries.get(pk=made["delivery"])).data}


def _delivered(delivery) -> tuple[int, dict]:
    return 201, {"order": delivery.order_id, "delivery": delivery.pk}


class OrderListApi(ConnectorApi):
    class Filter(StrictQuery):
        status = serializers.ChoiceField(choices=OrderStatus.choices, required=False)
        updated_since = serializers.DateTimeField(required=False)
        limit = StrictInteger(required=False, min_value=1, max_value=200, help_text="At most 200 (50 unless told).")
        offset = StrictInteger(required=False, min_value=0)

    class Page(LimitOffsetPagination):
        default_limit = 50
        max_limit = 200

    @extend_schema(
        operation_id="orders_list",
        parameters=[Filter],
        responses={
            200: inline_serializer(
                "OrderPage",
                {
                    "count": serializers.IntegerField(),
                    "next": serializers.URLField(allow_null=True),
                    "previous": serializers.URLField(allow_null=True),
                    "results": OrderSummaryOut(many=True),
                },
            ),
            **ERRORS,
        },
    )
    def get(self, request):
        query = self.Filter(data=request.query_params)
        query.is_valid(raise_exception=True)
        orders = connection_orders(self.connection())
        if "status" in query.validated_data:
            orders = orders.filter(status=query.validated_data["status"])
        if "updated_since" in query.validated_data:
            orders = orders.filter(updated_at__gte=query.validated_data["updated_since"])
        page = self.Page()
        rows = page.paginate_queryset(orders, request, view=self)
        return page.get_paginated_response(OrderSummaryOut(rows, many=True).data)


class ProductListApi(ConnectorApi):
    @extend_schema(operation_id="products_list", responses={200: ProductOut(many=True), **ERRORS})
    def get(self, request):
        return Response(ProductOut(connection_products(self.connection()), many=True).data)


class ProductDetailApi(ConnectorApi):
    @extend_schema(operation_id="products_read", responses={200: ProductOut, **ERRORS})
    def get(self, request, name: str):
        product = connection_products(self.connection()).filter(name=name).first()
        if product is None:
            raise ProductNotFound(f"The connection works no product {name}.")
        return Response(ProductOut(product).data)


class OrderDetailApi(ConnectorApi):
    @extend_schema(operation_id="orders_read", responses={200: OrderOut, **ERRORS})
    def get(self, request, order_id: str):
        order = answers.order_of(connection=self.connection(), order_id=order_id)
        return Response(OrderOut(order).data)


class OrderAcknowledgeApi(AnswerApi):
    answer_in = AcknowledgeIn

    @extend_schema(
        operation_id="orders_acknowledge",
        request=None,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: OrderOut, **ERRORS},
    )
    def post(self, request, order_id: str):
        return super().post(request, order_id)

    def answer(self, connection, order_id, data):
        return 200, {"order": answers.order_acknowledge(connection=connection, order_id=order_id).pk}


class OrderStatusUpdateApi(AnswerApi):
    answer_in = StatusUpdateIn

    @extend_schema(operation_id="orders_status_update", request=StatusUpdateIn, parameters=[IDEMPOTENCY_KEY])
    def post(self, request, order_id: str):
        return super().post(request, order_id)

    def answer(self, connection, order_id, data):
        delivery = answers.status_update_post(connection=connection, order_id=order_id, text=data["text"])
        return _delivered(delivery)


class OrderDocumentUploadApi(AnswerApi):
    answer_in = DocumentIn
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        operation_id="orders_document_upload",
        request={"multipart/form-data": DocumentIn},
        parameters=[IDEMPOTENCY_KEY],
        responses={201: DocumentOut, **ERRORS},
    )
    def post(self, request, order_id: str):
        return super().post(request, order_id)

    def answer(self, connection, order_id, data):
        document = answers.document_upload(connection=connection, order_id=order_id, upload=data["file"])
        return 201, {"document": document.pk}


class OrderDeliverApi(AnswerApi):
    answer_in = DeliverIn

    @extend_schema(operation_id="orders_deliver", request=DeliverIn, parameters=[IDEMPOTENCY_KEY])
    def post(self, request, order_id: str):
        return super().post(request, order_id)

    def answer(self, connection, order_id, data):
        delivery = answers.delivery_request(
            connection=connection,
            order_id=order_id,
            final=data["final"],
            message=data["message"],
            loan=data["loan"],
            document_ids=data.get("documents"),
        )
        return _delivered(delivery)


class OrderDeclineApi(AnswerApi):
    answer_in = DeclineIn

    @extend_schema(operation_id="orders_decline", request=DeclineIn, parameters=[IDEMPOTENCY_KEY])
    def post(self, request, order_id: str):
        return super().post(request, order_id)

    def answer(self, connection, order_id, data):
        delivery = answers.order_decline(connection=connection, order_id=order_id, reason=data["reason"])
        return _delivered(delivery)


ANSWERED = inline_serializer("Answered", {"order": OrderOut(), "delivery": DeliveryOut()})
for view in (OrderStatusUpdateApi, OrderDeliverApi, OrderDeclineApi):
    view.post = extend_schema(responses={201: ANSWERED, **ERRORS})(view.post)


class EventListApi(ConnectorApi):
    class Cursor(StrictQuery):
        after = StrictInteger(required=False, default=0, min_value=0, max_value=answers.ID_MAX)
        limit = StrictInteger(required=False, default=FEED_PAGE, min_value=1, max_value=FEED_PAGE)

    @extend_schema(operation_id="events_list", parameters=[Cursor], responses={200: EventPageOut, **ERRORS})
    def get(self, request):
        cursor = self.Cursor(data=request.query_params)
        cursor.is_valid(raise_exception=True)
        after = cursor.validated_data["after"]
        events = events_feed(connection=self.connection(), after=after, limit=cursor.validated_data["limit"])
        next_after = events[-1].position if events else after
        return Response({"events": EventOut(events, many=True).data, "next_after": next_after})


class RouteUnknownApi(APIView):
    """Any path under /api/v1/ that names none of its routes (the last of them): a 404 problem, as
    every error of the API. Not an operation of the API's document."""

    authentication_classes = []
    permission_classes = []
    renderer_classes = [JSONRenderer]
    error_shape = PROBLEM
    schema = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise exceptions.NotFound("No such route in this API (see the OpenAPI document).")
