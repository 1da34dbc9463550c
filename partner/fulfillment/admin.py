"""Orders in the admin: where each transaction is, what happened, and a retry action."""

import json

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from partner.fulfillment.models import Order, OrderDocument, OrderStep
from partner.fulfillment.orders.selectors import orders_awaiting_confirmation
from partner.fulfillment.orders.services import order_confirm, order_retry
from partner.fulfillment.staff import admin as admin_staff  # noqa: F401  (registers the staff's work queue and order pages)


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


class OrderStepInline(admin.TabularInline):
    model = OrderStep
    fields = ["created_at", "name", "detail", "actor"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


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
    list_display = ["transaction_id", "product_name", "status", "resource_id", "attempts", "created_at", "updated_at"]
    list_filter = ["status", AwaitingConfirmationFilter, "failure_code", "product_name", "request_type"]
    search_fields = ["transaction_id", "resource_id", "reference_number"]
    date_hierarchy = "created_at"
    inlines = [OrderDocumentInline, OrderStepInline]
    actions = ["retry", "confirm"]
    readonly_fields = [
        "transaction_id",
        "notifications_link",
        "resource_ref",
        "product_name",
        "request_type",
        "status",
        "resource_id",
        "reference_number",
        "response_pretty",
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
    ]
    exclude = ["response"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # read-only: what happened is never edited by hand

    def has_retry_permission(self, request):
        """The retry action puts orders back to work: it needs the change permission, not just view."""
        return request.user.has_perm("fulfillment.change_order")

    has_confirm_permission = has_retry_permission

    @admin.display(description="Notifications")
    def notifications_link(self, obj):
        """The inbox's notifications of this order: its webhook and the callbacks' (named by their reference)."""
        url = reverse("admin:inbox_notification_changelist") + "?" + urlencode({"q": obj.transaction_id})
        return format_html('<a href="{}">The notifications of this order</a>', url)

    @admin.display(description="Response")
    def response_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.response, indent=2, sort_keys=True) if obj.response else "")

    @admin.action(description="Retry the selected failed orders", permissions=["retry"])
    def retry(self, request, queryset):
        ids = list(queryset.values_list("pk", flat=True))
        retried = sum(1 for order_id in ids if order_retry(order_id=order_id))
        skipped = len(ids) - retried
        self.message_user(request, f"{retried} order(s) sent back to work.", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"{skipped} order(s) were not failed and were left alone.", messages.WARNING)

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
