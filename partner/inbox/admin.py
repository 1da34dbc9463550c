"""The webhook inbox in the admin: read-only, searchable, with the raw body and a replay action; nothing
is deleted here (the inbox's retention removes what must go)."""

import json

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html

from partner.fulfillment.orders.selectors import order_get
from partner.inbox.models import Notification
from partner.inbox.outbox import notification_replay
from partner.platform import client
from partner.platform.errors import RequestRefused, ServiceError


@admin.register(Notification)
class NotificationAdmin(admin.ModelAdmin):
    list_display = [
        "received_at",
        "event_type",
        "resource_type",
        "resource_id",
        "product_name",
        "state",
        "attempts",
        "duplicates",
    ]
    list_filter = ["state", "resource_type", "event_type", "product_name"]
    # The reference names the transaction of a callback event too, so an order's id finds all its notifications.
    search_fields = ["resource_id", "resource_ref", "event_id", "product_name", "dedupe_key"]
    date_hierarchy = "received_at"
    actions = ["replay"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "received_at",
                    "state",
                    "attempts",
                    "duplicates",
                    "last_error",
                    "enqueued_at",
                    "claimed_until",
                    "processed_at",
                ]
            },
        ),
        (
            "Notification",
            {
                "fields": [
                    "event_id",
                    "event_type",
                    "event_time",
                    "resource_type",
                    "resource_id",
                    "product_name",
                    "resource_ref",
                    "order_link",
                    "dedupe_key",
                ]
            },
        ),
        ("As received", {"fields": ["remote_addr", "headers_pretty", "body_pretty"]}),
    ]
    # Everything shown is read-only: what the service sent and what we did with it.
    readonly_fields = [name for _, options in fieldsets for name in options["fields"]]

    def has_add_permission(self, request):
        return False

    @admin.display(description="Order")
    def order_link(self, obj):
        """The order this notification is about: by the transaction its reference names."""
        try:
            transaction_id = client.resource_ref_parse(obj.resource_ref).transaction_id if obj.resource_ref else ""
        except (ServiceError, RequestRefused):
            transaction_id = ""
        order = order_get(transaction_id=transaction_id or obj.resource_id)
        if order is None:
            return "none yet"
        url = reverse("admin:fulfillment_order_change", args=[order.pk])
        return format_html('<a href="{}">{} ({})</a>', url, order.transaction_id, order.get_status_display())

    def has_change_permission(self, request, obj=None):
        return False  # read-only: what happened is never edited by hand

    def has_delete_permission(self, request, obj=None):
        return False  # the audit trail: the inbox's retention removes what must go

    def has_replay_permission(self, request):
        """The replay action puts notifications back to work: it needs the change permission, not just view."""
        return request.user.has_perm("inbox.change_notification")

    @admin.display(description="Headers")
    def headers_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.headers, indent=2, sort_keys=True))

    @admin.display(description="Raw body")
    def body_pretty(self, obj):
        return format_html("<pre style='white-space: pre-wrap'>{}</pre>", obj.body)

    @admin.action(description="Replay the selected notifications", permissions=["replay"])
    def replay(self, request, queryset):
        sent = sum(1 for pk in queryset.values_list("pk", flat=True) if notification_replay(notification_id=pk))
        level = messages.SUCCESS if sent == queryset.count() else messages.WARNING
        self.message_user(request, f"{sent} of {queryset.count()} notification(s) enqueued again.", level)
