"""Views of the embedded UI: the page the host frames, the origin proxy, the page's JSON reads and the
download of an order's delivered documents.

The page is served with a strict CSP (scripts only from our origin, no inline
code) and may only be framed by the host origins. The origin proxy and the order
check take the origin id and partner access token the host gave the page and
check them with the service every time, so they answer only to the lender in the
host. The origin proxy's answer carries a panel session (`panel_sessions.py`):
the progress poll and the document download take it instead, and cost the
service nothing.
"""

import json
import logging

from django.conf import settings
from django.http import FileResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST, require_safe
from django.views.generic import TemplateView
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from partner.core.framing import embeddable
from partner.core.ratelimits import address_rate_limited
from partner.fulfillment.automated.fulfillers.base import FINDINGS_COLUMNS, REFERENCE_LABEL, TRANSACTION_ID_LABEL
from partner.ui.contact import partner_contact
from partner.ui.errors import DocumentNotShown, UiRefused
from partner.ui.forms import order_options_form_class
from partner.ui.panel_sessions import (
    PANEL_SESSION_HEADER,
    PanelSession,
    panel_session_issue,
    panel_session_read,
    panel_session_seconds,
)
from partner.ui.progress import transaction_progress_get
from partner.ui.selectors import earlier_orders_list, transaction_document_get
from partner.ui.services import origin_context_fetch

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


def _has_panel_session(request) -> bool:
    return bool(request.META.get(PANEL_SESSION_HEADER))


# Each JSON read below that asks the service about the origin with the lender's token counts: one count
# per client address over all of them (settings.RATELIMIT_ORIGIN), so that no address can make us call
# the service at will; beyond it 429 with Retry-After, and the service is not called. A request with a
# panel session calls nobody: it is not counted (a forged one is refused by its signature).
_origin_rate_limited = address_rate_limited(
    group="ui-origin", rate=lambda: settings.RATELIMIT_ORIGIN, unless=_has_panel_session
)


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
        context["refresh_after_ms"] = int(settings.UI_ORIGIN_REFRESH_AFTER * 1000)
        context["poll_ms"] = int(settings.UI_PROGRESS_POLL_SECONDS * 1000)
        # A staff-worked order changes over hours: while it is with staff the page asks less often.
        context["staff_poll_ms"] = int(settings.UI_STAFF_POLL_SECONDS * 1000)
        # Opened on its own, the page says where it opens: in local runs, the sandbox's host page too.
        context["host_page_url"] = reverse("sandbox:host-page") if settings.SANDBOX_ENABLED else ""
        # Who to contact, wherever a text says to: the respondingParty our responses name.
        context["contact"] = partner_contact()
        # The title until the product is known (then the product's name), and the words the report uses.
        context["partner_name"] = settings.PARTNER_NAME
        context["findings_columns"] = FINDINGS_COLUMNS
        context["reference_label"] = REFERENCE_LABEL
        context["transaction_id_label"] = TRANSACTION_ID_LABEL
        return context


embed_page = embeddable(_with_page_csp(never_cache(ensure_csrf_cookie(require_safe(EmbedPage.as_view())))))


def _origin_from_headers(request) -> tuple[str, str]:
    return request.META.get(ORIGIN_ID_HEADER, "").strip(), request.META.get(PAT_HEADER, "").strip()


def _refusal(refused: UiRefused, response_class=Response):
    """What the page reads when it is refused: the refusal's body (`extra`) with its status."""
    return response_class(refused.extra, status=refused.status_code)


def _origin_context(request):
    """The origin the page's headers name, checked with the service (OriginProblem when refused)."""
    origin_id, token = _origin_from_headers(request)
    return origin_context_fetch(origin_id=origin_id, partner_access_token=token)


def _session_of(context) -> PanelSession:
    """The panel session of a checked origin: its lender (partner account and company), product and loan."""
    return PanelSession(
        origin_id=context.origin_id,
        product_name=context.product_name,
        loan_number=context.loan_number,
        account_id=context.account_id,
        company_id=context.company_id,
    )


def _panel_lender(request) -> dict:
    """Whose orders the page may see: from its panel session (no call to the service), or from the
    origin in its headers, checked with the service. PanelSessionInvalid or OriginProblem when neither holds."""
    token = request.META.get(PANEL_SESSION_HEADER, "").strip()
    session = panel_session_read(token) if token else _session_of(_origin_context(request))
    return {**session.lender(), "loan_number": session.loan_number}


class ErrorsSerializer(serializers.Serializer):
    """`{"errors": [{status, code, message}]}`: why the origin or the order cannot be shown."""

    errors = serializers.ListField(child=serializers.DictField(), help_text="status, code, message")


class OriginProxyApi(APIView):
    """GET /v1/origins/{id}?partnerAccessToken=…: what the UI shows about the origin, never its credentials.

    200 with the loan summary, product and order options; 401 `{"status", "product",
    "missing", "title", "text", "next"}` when the lender's credentials are missing
    (`missing` true) or not accepted, in words; `{"errors": [...]}` when the service
    refuses the origin (401 when it has expired: renew it and ask again; 502
    otherwise) or the loan is missing (404).
    """

    class OriginOutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        loan = serializers.DictField(
            help_text="borrower, loanNumber, property, loanPurposeType, propertyUsageType, and the last two in words "
            "(loanPurposeLabel, propertyUsageLabel)"
        )
        product = serializers.DictField(help_text="id, name, listingName")
        user = serializers.DictField(help_text="name, organization")
        orderOptions = serializers.ListField(child=serializers.DictField())  # noqa: N815 - JSON name
        earlierOrders = serializers.ListField(  # noqa: N815 - JSON name
            child=serializers.DictField(),
            help_text="this loan's latest orders of the product: transactionId, referenceNumber, step, orderedAt, "
            "orderedBy",
        )
        panelSession = serializers.DictField(  # noqa: N815 - JSON name
            help_text="token (send it as X-Panel-Session on progress polls and downloads) and expiresIn (seconds)"
        )

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
        except UiRefused as refused:
            return _refusal(refused)
        session = _session_of(context)
        earlier = earlier_orders_list(loan_number=context.loan_number, **session.lender())
        panel = {"token": panel_session_issue(session), "expiresIn": panel_session_seconds()}
        body = {"id": context.origin_id, **context.summary, "earlierOrders": earlier, "panelSession": panel}
        return Response(self.OriginOutputSerializer(body).data)


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


class ValueShownSerializer(serializers.Serializer):
    """One delivered value in words: its label and its text as the product's response form writes it."""

    name = serializers.CharField(help_text="its path in the loan field, such as appraisedValue")
    label = serializers.CharField(help_text="the form's title, such as Appraised value")
    text = serializers.CharField(help_text="formatted as the form says: $455,000, November 27, 2026, ...")


class ValuesGroupSerializer(serializers.Serializer):
    """The values of one loan field a delivery carried (such as the appraisal)."""

    field = serializers.CharField(help_text="the loan field's name, such as appraisal")
    title = serializers.CharField(help_text="its title in the product's response form")
    values = ValueShownSerializer(many=True)


class TimelineEntrySerializer(serializers.Serializer):
    """One thing of the order that reached the service: a delivery of the partner's."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["acknowledgement", "status_update", "partial", "final", "decline"])
    label = serializers.CharField(help_text="the kind in the lender's words")
    text = serializers.CharField(allow_blank=True, help_text="the partner's status text (partnerStatus)")
    sent_at = serializers.DateTimeField(help_text="when it reached the service")
    documents = LenderDocumentSerializer(many=True)
    values = ValuesGroupSerializer(many=True, help_text="the loan values it carried, in words")


class TransactionProgressApi(APIView):
    """GET /ui/transactions/{id}: the order as its lender sees it, for the page holding a panel session.

    The panel session the origin proxy gave travels in header X-Panel-Session: no
    call to the service, two queries at most; an expired or forged one answers 401
    `panel_session_expired` (renew the origin, read the proxy again). Without it,
    the origin in headers X-Origin-Id and X-Partner-Access-Token is checked with
    the service, and the answers for a refused origin are those of the origin proxy.
    """

    class ProgressOutputSerializer(serializers.Serializer):
        transaction_id = serializers.CharField()
        status = serializers.CharField(allow_null=True, help_text="the order's state")
        step = serializers.ChoiceField(
            choices=["requested", "in_progress", "delivered", "completed", "failed", "declined"]
        )
        steps = serializers.ListField(
            child=serializers.DictField(), help_text="key, label, reached_at (null: not yet) of the four steps"
        )
        ended_at = serializers.DateTimeField(allow_null=True, help_text="when it failed or was declined")
        reason = serializers.CharField(allow_blank=True, help_text="why it failed or was declined, for the lender")
        failure = serializers.DictField(
            allow_null=True, help_text="cause (credentials, loan_data, partner), title, text, next: what to do"
        )
        reference_number = serializers.CharField(allow_blank=True, help_text="the partner's order reference")
        ordered_at = serializers.DateTimeField(allow_null=True)
        ordered_by = serializers.CharField(allow_blank=True, help_text="the lender user who placed it")
        findings = serializers.ListField(
            child=serializers.DictField(), help_text="label, before, after, changed: what the partner found"
        )
        results = ValuesGroupSerializer(
            many=True,
            help_text="every value the partner delivered (the latest of each), labelled and formatted as the "
            "product's response form says",
        )
        partner_status = serializers.CharField(allow_blank=True, help_text="the partner's last word to the lender")
        documents = LenderDocumentSerializer(
            many=True, help_text="every document that reached the lender, the latest delivery's first"
        )
        updated_at = serializers.DateTimeField(allow_null=True)
        finished = serializers.BooleanField(help_text="nothing more will change: completed or declined")
        staff_worked = serializers.BooleanField(help_text="worked by staff: the timeline grows over hours or days")
        due_at = serializers.DateTimeField(allow_null=True, help_text="when the partner expects to deliver")
        timeline = TimelineEntrySerializer(
            many=True, help_text="what reached the service, oldest first (the page shows it newest first)"
        )

    @extend_schema(
        operation_id="ui_transaction_progress",
        parameters=[
            OpenApiParameter("X-Panel-Session", OpenApiTypes.STR, OpenApiParameter.HEADER),
            OpenApiParameter("X-Origin-Id", OpenApiTypes.STR, OpenApiParameter.HEADER),
            OpenApiParameter("X-Partner-Access-Token", OpenApiTypes.STR, OpenApiParameter.HEADER),
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
            progress = transaction_progress_get(transaction_id=transaction_id, **_panel_lender(request))
        except UiRefused as refused:
            return _refusal(refused)
        return Response(self.ProgressOutputSerializer(progress).data)


@_origin_rate_limited
@never_cache
@require_GET
def transaction_document(request, transaction_id, document_id):
    """GET /ui/transactions/{id}/documents/{document_id}: a delivered document's file, as an attachment.

    Checked as the progress poll is (the panel session, or the origin in the same headers checked
    with the service and counted per address; then the order must be this lender's), and only a document that reached
    the lender (of a sent or confirmed delivery, or of an automated order's delivered response): 404
    for anything else, whichever the reason. A plain Django view: it answers a file, and DRF's content
    negotiation would refuse a client that asks for one by its type (406).
    """
    try:
        lender = _panel_lender(request)
        document = transaction_document_get(transaction_id=transaction_id, document_id=document_id, **lender)
        handle = _file_open(document)
    except UiRefused as refused:
        return _refusal(refused, JsonResponse)
    logger.info("document %s of transaction %s downloaded by the lender", document.pk, transaction_id)
    response = FileResponse(handle, as_attachment=True, filename=document.name, content_type=document.mime_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = DOCUMENT_CSP
    return response


def _file_open(document):
    """The document's file, opened; DocumentNotShown when it is gone (purged since its row was read)."""
    try:
        return document.file.open("rb")
    except FileNotFoundError:
        raise DocumentNotShown from None


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
    except UiRefused as refused:
        return _refusal(refused, JsonResponse)
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
