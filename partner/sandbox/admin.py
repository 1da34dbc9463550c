"""Admin pages of the sandbox, to watch the loop: transactions, responses (and each PATCH
of them), events, webhook deliveries with their attempts, uploads, and the fault rules.

No secret is shown: tokens, partner access tokens and upload authorizations
exist only as digests (never displayed), user credentials and signing secrets
are encrypted columns left out of every page.
"""

import json

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from . import faults
from .models import (
    Event,
    FaultRule,
    Instance,
    LenderUser,
    Loan,
    Origin,
    Product,
    Response,
    ResponsePatch,
    Transaction,
    UploadSlot,
    WebhookAttempt,
    WebhookDelivery,
)


def _pretty(value) -> str:
    return format_html("<pre>{}</pre>", json.dumps(value, indent=2, ensure_ascii=False))


class ReadOnlyAdmin(admin.ModelAdmin):
    """The loop's records are written by the sandbox, not by hand."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Instance)
class InstanceAdmin(admin.ModelAdmin):
    list_display = ("instance_id", "name", "created_at")
    search_fields = ("instance_id", "name")


@admin.register(LenderUser)
class LenderUserAdmin(admin.ModelAdmin):
    list_display = ("username", "name", "instance", "has_credentials")
    list_filter = ("instance",)
    search_fields = ("username", "name")
    exclude = ("credentials_encrypted",)

    @admin.display(boolean=True)
    def has_credentials(self, obj):
        return obj.has_credentials


@admin.register(Loan)
class LoanAdmin(admin.ModelAdmin):
    list_display = ("guid", "loan_number", "city", "postal_code", "instance")
    search_fields = ("guid",)

    @admin.display(description="loan number")
    def loan_number(self, obj):
        return obj.data.get("loanNumber", "")

    def city(self, obj):
        return obj.subject_property.get("city", "")

    @admin.display(description="ZIP")
    def postal_code(self, obj):
        return obj.subject_property.get("postalCode", "")


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    list_display = ("name", "service_id", "listing_name", "updated_at")
    search_fields = ("name", "service_id")
    exclude = ("signing_secret", "data")
    readonly_fields = ("service_id", "document")

    @admin.display(description="listing name")
    def listing_name(self, obj):
        return obj.data.get("listingName", "")

    def document(self, obj):
        return _pretty(obj.data)


@admin.register(Origin)
class OriginAdmin(ReadOnlyAdmin):
    list_display = ("origin_id", "user", "loan", "product", "transaction", "generated_at")
    exclude = ("pat_digest",)
    list_select_related = ("user", "loan", "product", "transaction")


class ResponseInline(admin.StackedInline):
    model = Response
    extra = 0
    can_delete = False
    readonly_fields = ("merged", "patch_count", "processed_count", "updated_at")
    exclude = ("data",)

    def merged(self, obj):
        return _pretty(obj.data)


class ResponsePatchInline(admin.TabularInline):
    """Every PATCH of the response, in order: what each delivery said, before the merge."""

    model = ResponsePatch
    extra = 0
    can_delete = False
    verbose_name = "response PATCH"
    verbose_name_plural = "response PATCHes (each as it came)"
    fields = ("number", "created_at", "status", "partner_status", "resources_sent", "also_sent")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    @staticmethod
    def _payload(obj) -> dict:
        return obj.payload if isinstance(obj.payload, dict) else {}

    def status(self, obj):
        return self._payload(obj).get("status", "")

    @admin.display(description="partnerStatus")
    def partner_status(self, obj):
        return self._payload(obj).get("partnerStatus", "")

    @admin.display(description="resources")
    def resources_sent(self, obj):
        items = [item for item in self._payload(obj).get("resources") or [] if isinstance(item, dict)]
        return (
            format_html_join(", ", "{} ({})", ((item.get("name") or "unnamed", item.get("id", "")) for item in items))
            or "none"
        )

    @admin.display(description="also")
    def also_sent(self, obj):
        payload = self._payload(obj)
        parts = []
        if isinstance(payload.get("loan"), dict):
            parts.append("loan: " + ", ".join(sorted(payload["loan"])))
        if isinstance(payload.get("result"), dict):
            parts.append(f"result: {payload['result'].get('action', '')}")
        if payload.get("referenceNumber"):
            parts.append(f"referenceNumber {payload['referenceNumber']}")
        if payload.get("respondingParty"):
            parts.append("respondingParty")
        return "; ".join(parts)


class EventInline(admin.TabularInline):
    model = Event
    extra = 0
    can_delete = False
    fields = ("id", "type", "created_at")
    readonly_fields = fields


class SlotInline(admin.TabularInline):
    model = UploadSlot
    extra = 0
    can_delete = False
    fields = ("id", "name", "mime_type", "size", "uploaded_at")
    readonly_fields = fields


@admin.register(Transaction)
class TransactionAdmin(ReadOnlyAdmin):
    list_display = ("id", "product", "user", "loan", "request_type", "status", "created_at")
    list_filter = ("status", "product")
    search_fields = ("id",)
    list_select_related = ("product", "user", "loan")
    exclude = ("credentials_encrypted", "request")
    readonly_fields = ("request_document",)
    inlines = (ResponseInline, ResponsePatchInline, SlotInline, EventInline)

    @admin.display(description="request (credentials left out)")
    def request_document(self, obj):
        return _pretty(obj.request)


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdmin):
    list_display = ("transaction", "status", "patch_count", "processed_count", "updated_at")
    exclude = ("data",)
    readonly_fields = ("merged",)

    def status(self, obj):
        return obj.data.get("status", "")

    def merged(self, obj):
        return _pretty(obj.data)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "transaction", "type", "created_at")
    list_filter = ("type",)
    search_fields = ("id", "transaction__id")


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ("number", "started_at", "duration_ms", "status_code", "error", "response_excerpt")
    readonly_fields = fields


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = (
        "event_id",
        "resource_type",
        "resource_id",
        "product",
        "status",
        "attempt_count",
        "last_status_code",
        "created_at",
    )
    list_filter = ("status", "resource_type", "product")
    search_fields = ("event_id", "resource_id")
    list_select_related = ("product",)
    exclude = ("body",)
    readonly_fields = ("body_sent",)
    inlines = (AttemptInline,)

    @admin.display(description="body (exact bytes sent)")
    def body_sent(self, obj):
        return format_html("<pre>{}</pre>", bytes(obj.body).decode("utf-8", "replace"))


@admin.register(UploadSlot)
class UploadSlotAdmin(ReadOnlyAdmin):
    list_display = ("id", "transaction", "name", "mime_type", "size", "uploaded_at")
    list_filter = ("mime_type",)
    search_fields = ("id", "transaction__id", "name")
    exclude = ("content", "authorization_digest")


@admin.register(FaultRule)
class FaultRuleAdmin(admin.ModelAdmin):
    list_display = ("endpoint", "status", "rate", "latency", "drop_webhooks", "remaining", "active", "created_at")
    list_editable = ("active",)
    list_filter = ("endpoint", "active")

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        faults.rules_forget()

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        faults.rules_forget()

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        faults.rules_forget()
