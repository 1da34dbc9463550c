"""Orders in the admin: where each transaction is, what happened, and a retry action.

An order's page starts with its outcome (where it stands and who ordered it for which company; for a
failed order one sentence of cause and one of action, by kind of failure (`orders/failures.py`), with
Retry only where sending it again can succeed; for one delivered and not confirmed, Confirm), then
the request, the findings and the response as tables in the staff's words (a section only when it
holds something), the documents when there are any, every call tried to send its deliveries (each
slot request, upload and PATCH: what came of it, how long it took, the answer's start) when there
were any, and the history in the staff's words. The
platform's ids and the recorded error stay under "Technical detail", folded. Nothing is deleted here:
orders are the audit trail, and the retention purge removes what must go
(`partner.fulfillment.recovery.retention`).
"""

from functools import partial

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from partner.fulfillment.models import DeliveryAttempt, Order, OrderDocument, OrderStatus, OrderStep
from partner.fulfillment.orders.failures import failure_for_staff, failure_kind
from partner.fulfillment.orders.selectors import orders_awaiting_confirmation
from partner.fulfillment.orders.services import order_confirm, order_retry
from partner.fulfillment.staff import admin as admin_staff  # noqa: F401  (registers the staff's work queue and order pages)
from partner.fulfillment.staff.selectors import STATUS_LABELS, Item, step_detail, step_label, value_items

TABLE = '<table class="order-values"><tbody>{}</tbody></table>'


def _rows(items: list[Item], *, within: str = "") -> list[tuple[str, str]]:
    """Nested items as (label, value) rows, a nested value's label its path ("Subject property: City")."""
    rows = []
    for item in items:
        label = f"{within}: {item.label}" if within else item.label
        rows += _rows(item.children, within=label) if item.children else [(label, item.text)]
    return rows


def value_table(value) -> str:
    """A request or a response as a two-column table (labels from the loan labels), "–" when empty."""
    if not value:
        return "–"
    rows = _rows(value_items(value))
    return format_html(TABLE, format_html_join("", '<tr><th scope="row">{}</th><td>{}</td></tr>', rows))


def findings_table(findings) -> str:
    """The findings (field, as received, as corrected) as a table; any other shape as `value_table`."""
    if not findings:
        return "–"
    if not all(isinstance(row, dict) and "label" in row for row in findings):
        return value_table(findings)
    head = mark_safe("<tr><th>Field</th><th>As received</th><th>As corrected</th><th>Changed</th></tr>")  # noqa: S308
    body = format_html_join(
        "",
        '<tr><th scope="row">{}</th><td>{}</td><td>{}</td><td>{}</td></tr>',
        (
            (row["label"], row.get("before") or "–", row.get("after") or "–", "yes" if row.get("changed") else "")
            for row in findings
        ),
    )
    return format_html('<table class="order-values"><thead>{}</thead><tbody>{}</tbody></table>', head, body)


class OrderDocumentInline(admin.TabularInline):
    model = OrderDocument
    fields = ["position", "name", "mime_type", "size", "resource_id", "uploaded_at", "download"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="file")
    def download(self, obj):
        """The document's bytes, for staff (a logged download); "–" once purged."""
        if not obj.file:
            return "–"
        url = reverse("admin:fulfillment_stafforder_document_download", args=[obj.pk])
        return format_html('<a href="{}">download</a>', url)


class DeliveryAttemptInline(admin.TabularInline):
    """Every call tried to send the order's deliveries (each slot request, upload and PATCH), as an
    event's tries show on its page: when, what, what came of it, how long, and the answer's start."""

    model = DeliveryAttempt
    verbose_name = "call to the service"
    verbose_name_plural = "Calls to the service, each try"
    fields = ["started_at", "call", "for_delivery", "outcome", "took", "answer"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("delivery")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="sending")
    def for_delivery(self, obj):
        return obj.delivery.get_kind_display()

    @admin.display(description="what came of it")
    def outcome(self, obj):
        return obj.outcome

    @admin.display(description="took")
    def took(self, obj):
        return f"{obj.duration_ms / 1000:.2f} s"


class OrderStepInline(admin.TabularInline):
    """The order's history in the staff's words: what happened, its detail without ids, who."""

    model = OrderStep
    template = "admin/fulfillment/order/history_inline.html"
    verbose_name = "event"
    verbose_name_plural = "History"
    fields = ["when", "what", "about", "who"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="when")
    def when(self, obj):
        return obj.created_at

    @admin.display(description="what happened")
    def what(self, obj):
        return step_label(obj.name)

    @admin.display(description="detail")
    def about(self, obj):
        return step_detail(obj.name, obj.detail) or "–"

    @admin.display(description="who")
    def who(self, obj):
        return obj.actor or "system"


def ordered_by_text(order: Order) -> str:
    """Who placed the order and for which company ("lender.demo of Demo Lending"); "" when unknown."""
    account = order.ordered_by if order.ordered_by_id else None
    if account is None:
        return ""
    company = account.company.name if account.company_id else ""
    return f"{account.username} of {company}" if company else account.username


class AwaitingConfirmationFilter(admin.SimpleListFilter):
    """Delivered orders whose "processed" callback has not come within CONFIRMATION_WAIT_SECONDS."""

    title = "confirmation"
    parameter_name = "confirmation"

    def lookups(self, request, model_admin):
        return [("awaiting", "Awaiting the service's confirmation")]

    def queryset(self, request, queryset):
        if self.value() == "awaiting":
            return queryset.filter(pk__in=orders_awaiting_confirmation().values("pk"))
        return queryset


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
    # Keyed as staff know an order: our reference, the product, the lender's company, the state in words;
    # the platform's ids behind a details toggle (searchable all the same).
    list_display = ["reference", "product", "company", "state", "created_at", "ids"]
    list_display_links = ["reference"]
    list_select_related = ["ordered_by__company"]
    list_filter = ["status", AwaitingConfirmationFilter, "failure_code", "product_name", "request_type"]
    search_fields = ["transaction_id", "resource_id", "reference_number", "loan_number"]
    date_hierarchy = "created_at"
    inlines = [OrderDocumentInline, DeliveryAttemptInline, OrderStepInline]
    actions = ["retry", "confirm"]
    change_form_template = "admin/fulfillment/order/change_form.html"
    fieldsets = [
        (None, {"fields": ["reference_number", "product", "ordered_by_shown", "loan_number", "state"]}),
        ("The request, as the lender sent it", {"fields": ["request_table"]}),
        ("What the work found", {"fields": ["findings_table"]}),
        ("The response", {"fields": ["response_table"]}),
        (
            "Technical detail",
            {
                "classes": ["collapse"],
                "fields": [
                    "transaction_id",
                    "request_type",
                    "resource_id",
                    "notifications_link",
                    "resource_ref",
                    "prepared_at",
                    "delivered_at",
                    "completed_at",
                    "failed_at",
                    "event_id",
                    "attempts",
                    "last_error",
                    "failure_code",
                    "failure_reason",
                    "claimed_until",
                    "next_attempt_at",
                    "created_at",
                    "updated_at",
                ],
            },
        ),
    ]
    # A section shows only when its value holds something: (section title, the order's field it shows).
    _SHOWN_WHEN = {
        "The request, as the lender sent it": "request",
        "What the work found": "findings",
        "The response": "response",
    }
    readonly_fields = [name for _, options in fieldsets for name in options["fields"]]

    def get_fieldsets(self, request, obj=None):
        if obj is None:
            return self.fieldsets
        return [
            (title, options)
            for title, options in self.fieldsets
            if title not in self._SHOWN_WHEN or getattr(obj, self._SHOWN_WHEN[title])
        ]

    def get_inlines(self, request, obj):
        """The documents and the calls to the service only when the order has any; the history always."""
        if obj is None:
            return self.inlines
        shown = {OrderDocumentInline: obj.attachments.exists(), DeliveryAttemptInline: obj.service_tries.exists()}
        return [inline for inline in self.inlines if shown.get(inline, True)]

    @admin.display(description="reference", ordering="reference_number")
    def reference(self, obj):
        return obj.reference_number or "(none yet)"

    @admin.display(description="product", ordering="product_name")
    def product(self, obj):
        return obj.product_name or "–"

    @admin.display(description="lender company", ordering="ordered_by__company__name")
    def company(self, obj):
        account = obj.ordered_by if obj.ordered_by_id else None
        return account.company.name if account is not None and account.company_id else "–"

    @admin.display(description="ids")
    def ids(self, obj):
        """The platform's transaction id and the attempts, folded: what support may ask for."""
        rows = [("Transaction", obj.transaction_id), ("Attempts", str(obj.attempts))]
        if obj.resource_id:
            rows.insert(1, ("Document", obj.resource_id))
        return format_html(
            '<details class="order-ids"><summary>Details</summary><dl>{}</dl></details>',
            format_html_join("", "<dt>{}</dt><dd>{}</dd>", rows),
        )

    @admin.display(description="ordered by")
    def ordered_by_shown(self, obj):
        return ordered_by_text(obj) or "–"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # read-only: what happened is never edited by hand

    def has_delete_permission(self, request, obj=None):
        return False  # the audit trail: the retention purge removes what must go

    def has_retry_permission(self, request):
        """The retry action puts orders back to work: it needs the change permission, not just view."""
        return request.user.has_perm("fulfillment.change_order")

    has_confirm_permission = has_retry_permission

    @admin.display(description="state", ordering="status")
    def state(self, obj):
        return STATUS_LABELS.get(obj.status, obj.get_status_display())

    @admin.display(description="Notifications")
    def notifications_link(self, obj):
        """The inbox's notifications of this order: its webhook and the callbacks' (named by their reference)."""
        url = reverse("admin:inbox_notification_changelist") + "?" + urlencode({"q": obj.transaction_id})
        return format_html('<a href="{}">The notifications of this order</a>', url)

    @admin.display(description="Request")
    def request_table(self, obj):
        return value_table(obj.request)

    @admin.display(description="Findings")
    def findings_table(self, obj):
        return findings_table(obj.findings)

    @admin.display(description="Response")
    def response_table(self, obj):
        return value_table(obj.response)

    # The outcome on top, with its button.

    def change_view(self, request, object_id, form_url="", extra_context=None):
        order = self.get_object(request, object_id)
        extra = dict(extra_context or {})
        if order is not None:
            may = self.has_retry_permission(request)
            failed = order.status == OrderStatus.FAILED
            failure = (
                failure_for_staff(order.failure_code, order.failure_reason or order.last_error) if failed else None
            )
            extra["outcome"] = {
                "state": STATUS_LABELS.get(order.status, order.get_status_display()),
                "failed": failed,
                "failure": failure,
                "ordered_by": ordered_by_text(order),
                "product": order.product_name,
                "at": order.failed_at if failed else order.completed_at,
                "retry_url": reverse("admin:fulfillment_order_retry_one", args=[order.pk])
                if may and failed and failure["retry"]
                else "",
                "confirm_url": reverse("admin:fulfillment_order_confirm_one", args=[order.pk])
                if may and order.status == OrderStatus.RESPONSE_DELIVERED
                else "",
            }
        return super().change_view(request, object_id, form_url, extra)

    def get_urls(self):
        def url(route, view, name):
            return path(route, self.admin_site.admin_view(partial(view, model_admin=self)), name=name)

        return [
            url("<int:order_id>/retry/", _retry_one_view, "fulfillment_order_retry_one"),
            url("<int:order_id>/confirm/", _confirm_one_view, "fulfillment_order_confirm_one"),
            *super().get_urls(),
        ]

    @admin.action(description="Retry the selected failed orders", permissions=["retry"])
    def retry(self, request, queryset):
        rows = list(queryset.values_list("pk", "failure_code", "failure_reason"))
        ids = [pk for pk, code, reason in rows if _retry_helps(code, reason)]
        retried = sum(1 for order_id in ids if order_retry(order_id=order_id))
        skipped = len(ids) - retried
        self.message_user(request, f"{retried} order(s) sent back to work.", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{skipped} order(s) were not failed and were left alone.", messages.WARNING)
        if len(rows) > len(ids):
            self.message_user(
                request,
                f"{len(rows) - len(ids)} order(s) failed for a reason a retry cannot put right (the lender must "
                "correct their credentials or loan, or the platform refuses it): left alone; their pages say why.",
                messages.WARNING,
            )

    @admin.action(description="Confirm the service processed the selected delivered orders", permissions=["confirm"])
    def confirm(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        who = request.user.get_username()
        confirmed = sum(1 for order_id in ids if order_confirm(order_id=order_id, by=who))
        self.message_user(request, f"{confirmed} order(s) confirmed as completed.", messages.SUCCESS)
        if len(ids) - confirmed:
            self.message_user(
                request,
                f"{len(ids) - confirmed} order(s) were not awaiting confirmation and were left alone.",
                messages.WARNING,
            )


def _retry_helps(code: str, reason: str) -> bool:
    """A failed order that sending through again can complete once its cause is put right; an order
    that is not failed (no code) is left to `order_retry`, which leaves it alone."""
    return not code or failure_kind(code, reason).retry_helps


def _page(order_id: int):
    return redirect(reverse("admin:fulfillment_order_change", args=[order_id]))


@require_POST
def _retry_one_view(request, order_id: int, *, model_admin):
    """The order page's Retry: the same service as the list's action, for this order."""
    if not model_admin.has_retry_permission(request):
        raise PermissionDenied
    order = Order.objects.filter(pk=order_id).only("failure_code", "failure_reason").first()
    if order is not None and not _retry_helps(order.failure_code, order.failure_reason):
        messages.warning(request, "A retry cannot put this failure right: the page says what to do.")
    elif order_retry(order_id=order_id):
        messages.success(request, "The order is back at work: this page shows where it stands.")
    else:
        messages.warning(request, "The order is not failed (or its data was purged): it was left alone.")
    return _page(order_id)


@require_POST
def _confirm_one_view(request, order_id: int, *, model_admin):
    """The order page's Confirm: the service processed it (its callback was lost)."""
    if not model_admin.has_confirm_permission(request):
        raise PermissionDenied
    if order_confirm(order_id=order_id, by=request.user.get_username()):
        messages.success(request, "The order is confirmed as completed.")
    else:
        messages.warning(request, "The order is not awaiting confirmation: it was left alone.")
    return _page(order_id)
