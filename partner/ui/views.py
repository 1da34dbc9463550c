"""Views of the embedded UI: the page the host frames, the origin proxy, the page's JSON reads and the
download of an order's delivered documents.

The page is served with a strict CSP (scripts only from our origin, no inline
code) and may only be framed by the host origins. The JSON endpoints take the
origin id and partner access token the host gave the page and check them with
the service every time, so they answer only to the lender in the host.
"""

import json
import logging

from django.conf import settings
from django.http import FileResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST
from django.views.generic import TemplateView
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from partner.core.framing import embeddable
from partner.core.ratelimits import address_rate_limited
from partner.ui.forms import order_options_form_class
from partner.ui.selectors import TransactionNotShown, transaction_document_get, transaction_progress_get
from partner.ui.services import OriginProblem, origin_context_fetch

logger = logging.getLogger(__name__)

# The page builds its DOM with our own scripts only: nothing inline, nothing from elsewhere.
PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
)

ORIGIN_ID_HEADER = "HTTP_X_ORIGIN_ID"
PAT_HEADER = "HTTP_X_PARTNER_ACCESS_TOKEN"  # noqa: S105 - a header name, not a secret
# A document we serve is never run nor rendered as a page of ours, whatever it holds.
DOCUMENT_CSP = "default-src 'none'; sandbox"


# Each JSON read below asks the service about the origin with the lender's token: one count per client
# address over all of them (settings.RATELIMIT_ORIGIN), so that no address can make us call the service
# at will; beyond it 429 with Retry-After, and the service is not called.
_origin_rate_limited = address_rate_limited(group="ui-origin", rate_setting="RATELIMIT_ORIGIN")


def _with_page_csp(view):
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = PAGE_CSP
        return response

    wrapper.__name__ = view.__name__
    wrapper.__doc__ = view.__doc__
    return wrapper


class EmbedPage(TemplateView):
    """GET /: the interface the host frames (new order form or existing transaction)."""

    template_name = "ui/embed.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        # Origins live 300 s; renew a minute early. A setting, so a test can watch it happen.
        context["refresh_after_ms"] = int(getattr(settings, "UI_ORIGIN_REFRESH_AFTER", 240) * 1000)
        context["poll_ms"] = int(getattr(settings, "UI_PROGRESS_POLL_SECONDS", 3) * 1000)
        # A staff-worked order changes over hours: while it is with staff the page asks less often.
        context["staff_poll_ms"] = int(settings.UI_STAFF_POLL_SECONDS * 1000)
        return context


embed_page = embeddable(_with_page_csp(never_cache(ensure_csrf_cookie(require_GET(EmbedPage.as_view())))))


def _origin_from_headers(request) -> tuple[str, str]:
    return request.META.get(ORIGIN_ID_HEADER, "").strip(), request.META.get(PAT_HEADER, "").strip()


def _origin_context(request):
    """The origin the page's headers name, checked with the service (OriginProblem when refused)."""
    origin_id, token = _origin_from_headers(request)
    return origin_context_fetch(origin_id=origin_id, partner_access_token=token)


def _lender_of(context) -> dict:
    """Whose orders the checked origin may see: its product, partner account and company."""
    return {"product_name": context.product_name, "account_id": context.account_id, "company_id": context.company_id}


def _not_shown(code: str, message: str) -> dict:
    return {"errors": [{"status": None, "code": code, "message": message}]}


class ErrorsSerializer(serializers.Serializer):
    """`{"errors": [{status, code, message}]}`: why the origin or the order cannot be shown."""

    errors = serializers.ListField(child=serializers.DictField(), help_text="status, code, message")


class OriginProxyApi(APIView):
    """GET /v1/origins/{id}?partnerAccessToken=…: what the UI shows about the origin, never its credentials.

    200 with the loan summary, product and order options; 401 `{"status"}` when
    the lender's credentials are invalid; `{"errors": [...]}` when the service
    refuses the origin (401 when it has expired: renew it and ask again; 502
    otherwise) or the loan is missing (404).
    """

    class OriginOutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        loan = serializers.DictField(help_text="borrower, loanNumber, property, loanPurposeType, propertyUsageType")
        product = serializers.DictField(help_text="id, name, listingName")
        user = serializers.DictField(help_text="name, organization")
        orderOptions = serializers.ListField(child=serializers.DictField())  # noqa: N815 - JSON name

    @extend_schema(
        operation_id="origin_proxy",
        parameters=[
            OpenApiParameter("partnerAccessToken", OpenApiTypes.STR, OpenApiParameter.QUERY),
            OpenApiParameter(
                "X-Partner-Access-Token",
                OpenApiTypes.STR,
                OpenApiParameter.HEADER,
                description="the same token in a header (kept out of access logs); one of the two is required",
            ),
        ],
        responses={
            200: OriginOutputSerializer,
            400: ErrorsSerializer,
            401: OpenApiTypes.OBJECT,
            404: ErrorsSerializer,
            429: ErrorsSerializer,
            502: ErrorsSerializer,
        },
    )
    def get(self, request, origin_id):
        # The spec's query parameter, or (what our page sends) the header, which stays out of access logs.
        token = (request.META.get(PAT_HEADER) or request.query_params.get("partnerAccessToken", "")).strip()
        try:
            context = origin_context_fetch(origin_id=origin_id, partner_access_token=token)
        except OriginProblem as problem:
            return Response(problem.body, status=problem.http_status)
        return Response(self.OriginOutputSerializer({"id": context.origin_id, **context.summary}).data)


class LenderDocumentSerializer(serializers.Serializer):
    """A delivered document, as the lender's page lists it."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    mime_type = serializers.CharField()
    size = serializers.IntegerField(help_text="bytes")
    resource_id = serializers.CharField(allow_blank=True, help_text="the service's copy")
    download_url = serializers.CharField(
        allow_null=True, help_text="GET it with the origin headers; null once the file is gone (retention)"
    )


class TimelineEntrySerializer(serializers.Serializer):
    """One thing of the order that reached the service: a delivery of the partner's."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["acknowledgement", "status_update", "partial", "final", "decline"])
    label = serializers.CharField(help_text="the kind in the lender's words")
    text = serializers.CharField(allow_blank=True, help_text="the partner's status text (partnerStatus)")
    sent_at = serializers.DateTimeField(help_text="when it reached the service")
    documents = LenderDocumentSerializer(many=True)


class TransactionProgressApi(APIView):
    """GET /ui/transactions/{id}: the order's step, attachments and timeline, for the lender holding a live origin.

    The origin travels in headers X-Origin-Id and X-Partner-Access-Token (not in
    the address, so it stays out of access logs); the answers for a refused origin
    are those of the origin proxy.
    """

    class ProgressOutputSerializer(serializers.Serializer):
        transaction_id = serializers.CharField()
        status = serializers.CharField(allow_null=True, help_text="the tracker's state")
        step = serializers.ChoiceField(
            choices=["requested", "in_progress", "delivered", "completed", "failed", "declined"]
        )
        reason = serializers.CharField(allow_blank=True)
        reference_number = serializers.CharField(allow_blank=True, help_text="the partner's order reference")
        partner_status = serializers.CharField(allow_blank=True, help_text="the partner's last word to the lender")
        attachments = serializers.ListField(child=serializers.DictField(), help_text="name, mime_type, resource_id")
        updated_at = serializers.DateTimeField(allow_null=True)
        finished = serializers.BooleanField(help_text="nothing more will change: completed, failed or declined")
        staff_worked = serializers.BooleanField(help_text="worked by staff: the timeline grows over hours or days")
        due_at = serializers.DateTimeField(allow_null=True, help_text="when the partner expects to deliver")
        timeline = TimelineEntrySerializer(many=True, help_text="what reached the service, oldest first")

    @extend_schema(
        operation_id="ui_transaction_progress",
        parameters=[
            OpenApiParameter("X-Origin-Id", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            OpenApiParameter("X-Partner-Access-Token", OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
        ],
        responses={
            200: ProgressOutputSerializer,
            400: ErrorsSerializer,
            401: OpenApiTypes.OBJECT,
            404: ErrorsSerializer,
            429: ErrorsSerializer,
            502: ErrorsSerializer,
        },
    )
    def get(self, request, transaction_id):
        try:
            context = _origin_context(request)
        except OriginProblem as problem:
            return Response(problem.body, status=problem.http_status)
        try:
            progress = transaction_progress_get(
                transaction_id=transaction_id,
                **_lender_of(context),
            )
        except TransactionNotShown:
            return Response(_not_shown("transaction_unknown", "No such order for this product."), status=404)
        return Response(self.ProgressOutputSerializer(progress).data)


@_origin_rate_limited
@never_cache
@require_GET
def transaction_document(request, transaction_id, document_id):
    """GET /ui/transactions/{id}/documents/{document_id}: a delivered document's file, as an attachment.

    Checked as the progress poll is (the origin in the same headers, checked with the service, the
    same count per address; then the order must be this lender's), and only a document that reached
    the lender (of a sent or confirmed delivery, or of an automated order's delivered response): 404
    for anything else, whichever the reason. A plain Django view: it answers a file, and DRF's content
    negotiation would refuse a client that asks for one by its type (406).
    """
    try:
        context = _origin_context(request)
    except OriginProblem as problem:
        return JsonResponse(problem.body, status=problem.http_status)
    try:
        document = transaction_document_get(
            transaction_id=transaction_id,
            document_id=document_id,
            **_lender_of(context),
        )
        handle = document.file.open("rb")
    except (TransactionNotShown, FileNotFoundError):
        return JsonResponse(_not_shown("document_unknown", "No such document for this order."), status=404)
    logger.info("document %s of transaction %s downloaded by the lender", document.pk, transaction_id)
    response = FileResponse(handle, as_attachment=True, filename=document.name, content_type=document.mime_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = DOCUMENT_CSP
    return response


@_origin_rate_limited
@never_cache
@require_POST
def order_check(request):
    """POST /ui/orders/check: clean the chosen options into the request the host will create.

    A plain Django view so that the CSRF middleware guards it (DRF views are
    CSRF-exempt without session authentication). It needs a live origin with
    valid credentials, so no order starts for a lender who cannot be served.
    Body: {"options": {...}}; 200 {"request": {"type", "options"}}, 400
    {"fields": {name: [messages]}}, or the origin proxy's answers.
    """
    try:
        context = _origin_context(request)
    except OriginProblem as problem:
        return JsonResponse(problem.body, status=problem.http_status)
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"fields": {"__all__": ["The order could not be read; reload the page."]}}, status=400)
    options = body.get("options") if isinstance(body, dict) else None
    form = order_options_form_class(context.fulfiller)(data=options if isinstance(options, dict) else {})
    if not form.is_valid():
        fields = {name: [str(message) for message in messages] for name, messages in form.errors.items()}
        return JsonResponse({"fields": fields}, status=400)
    return JsonResponse({"request": {"type": "NEW_REQUEST", "options": form.cleaned_data}})


origin_proxy = _origin_rate_limited(never_cache(OriginProxyApi.as_view()))
transaction_progress = _origin_rate_limited(never_cache(TransactionProgressApi.as_view()))
