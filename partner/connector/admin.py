"""The connector in the admin: each connection's health, its events and their attempts, replays,
and the take-over of a connected order by hand.

Thin: each action calls one service (`partner.connector.services`). Secrets are never shown on a
list or a change page: a connection's client secret and first signing secret are shown once, when it
is created, and a rotation's new secret once, when it is added, each in that answer's page alone
(never in a message, whose cookie would carry it).
"""

from datetime import UTC

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ActionForm
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince, timeuntil

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.connector import services
from partner.connector.models import (
    EVENT_TYPES,
    ConnectedOrder,
    Connection,
    Event,
    EventAttempt,
    EventState,
)
from partner.connector.selectors import connection_health
from partner.core.errors import ApplicationError


def when(moment, empty: str = "—") -> str:
    """A time as people read it: "2026-11-27 20:44 UTC (3 minutes ago)"."""
    if moment is None:
        return empty
    now = timezone.now()
    relative = f"{timesince(moment, now, depth=1)} ago" if moment <= now else f"in {timeuntil(moment, now, depth=1)}"
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({relative})"


def secrets_shown_once(request, created: services.Created):
    """The new connection's credentials as labelled fields and a paste-ready environment snippet
    (the names examples/order_system/ reads), shown once: never stored in clear, never shown again."""
    api = request.build_absolute_uri("/api/v1")
    values = [
        ("OAuth client id", "CLIENT_ID", created.client_id),
        ("OAuth client secret", "CLIENT_SECRET", created.client_secret),
        ("Signing secret", "SIGNING_SECRET", created.signing_secret),
        ("API base", "PARTNER_API", api),
    ]
    rows = format_html_join("", '<dt>{}</dt><dd><code class="connection-secret" data-name="{}">{}</code></dd>', values)
    snippet = "\n".join(f"{name}={value}" for _, name, value in values)
    return format_html(
        "Give these to the partner's system now: they are not shown again."
        '<dl class="connection-secrets">{}</dl>'
        "As environment variables (paste into the system's environment file):"
        '<pre class="connection-env">{}</pre>',
        rows,
        snippet,
    )


class ReplayForm(ActionForm):
    since = forms.DateTimeField(required=False, help_text="For “Replay everything since”: YYYY-MM-DD HH:MM (UTC).")
    product = forms.ModelChoiceField(
        Product.objects.filter(fulfiller=CONNECTED),
        required=False,
        help_text="For “Move a product to this connection”.",
    )


def action_value(request, name: str):
    """The cleaned value of one field of the action form (None: absent or invalid). The form as a
    whole never validates outside the admin's own view: its action choices are set there."""
    form = ReplayForm(request.POST)
    form.is_valid()
    return form.cleaned_data.get(name)


class ConnectionForm(forms.ModelForm):
    class Meta:
        model = Connection
        fields = ["name", "endpoint_url", "event_types", "enabled", "products", "notify_email"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["products"].queryset = Product.objects.filter(fulfiller=CONNECTED)
        self.fields["products"].help_text = f"The connected products whose orders it works (fulfiller “{CONNECTED}”)."

    def clean_endpoint_url(self):
        url = self.cleaned_data["endpoint_url"]
        if problem := services.endpoint_problem(url):
            raise forms.ValidationError(problem)
        return url

    def clean_products(self):
        products = self.cleaned_data["products"]
        if problem := services.claimed_problem(services.products_claimed(products, connection_id=self.instance.pk)):
            raise forms.ValidationError(problem)
        return products

    def clean_event_types(self):
        types = self.cleaned_data["event_types"] or []
        if not isinstance(types, list):
            raise forms.ValidationError('A list of event types, such as ["order.created", "order.completed"].')
        if unknown := services.event_types_unknown(types):
            known = ", ".join(EVENT_TYPES)
            raise forms.ValidationError(f"Unknown event type(s): {', '.join(unknown)}. The types are: {known}.")
        return types


@admin.register(Connection)
class ConnectionAdmin(admin.ModelAdmin):
    form = ConnectionForm
    action_form = ReplayForm
    list_display = ["name", "state", "endpoint_url", "last_success", "failing", "backlog"]
    readonly_fields = ["health", "secrets_held", "client_id"]

    class Media:
        js = ["connector/secrets.js"]  # Copy buttons beside the secrets shown once

    actions = ["replay_failed", "replay_since", "enable", "product_move_here", "secret_add", "secret_drop_oldest"]

    def get_queryset(self, request):
        waiting = Count("events", filter=Q(events__state=EventState.PENDING))
        return super().get_queryset(request).annotate(waiting=waiting)

    def get_fieldsets(self, request, obj=None):
        main = (None, {"fields": ["name", "endpoint_url", "enabled", "products", "event_types", "notify_email"]})
        if obj is None:
            return [main]
        return [("Health", {"fields": ["health"]}), main, ("Credentials", {"fields": ["client_id", "secrets_held"]})]

    @admin.display(description="state")
    def state(self, connection):
        if not connection.enabled:
            return "disabled"
        if not connection.endpoint_url:
            return "pulls the events feed"
        if connection.failing_since:
            return "failing"
        return "healthy" if connection.last_success_at else "not contacted yet"

    @admin.display(description="last success", ordering="last_success_at")
    def last_success(self, connection):
        return when(connection.last_success_at, "never")

    @admin.display(description="failing since", ordering="failing_since")
    def failing(self, connection):
        return when(connection.failing_since)

    @admin.display(description="waiting events", ordering="waiting")
    def backlog(self, connection):
        return connection.waiting

    @admin.display(description="health")
    def health(self, connection):
        health = connection_health(connection)
        events = reverse("admin:connector_event_changelist") + f"?connection__id__exact={connection.pk}"
        rows = [
            (
                "State",
                self.state(connection) + (f": {connection.disabled_reason}" if connection.disabled_reason else ""),
            ),
            ("Last success", when(health.last_success_at, "never")),
            ("Last failure", when(health.last_failure_at, "never")),
            ("Failing since", when(health.failing_since)),
            ("Failures in a row", health.consecutive_failures),
            ("Events waiting", health.backlog),
            ("Oldest waiting since", when(health.oldest_waiting_at)),
            ("Events failed", health.failed),
        ]
        table = format_html(
            '<table class="connection-health">{}</table>',
            format_html("".join(format_html("<tr><th>{}</th><td>{}</td></tr>", k, v) for k, v in rows)),
        )
        return format_html('{}<p><a href="{}">Its events and their attempts</a></p>', table, events)

    @admin.display(description="signing secrets")
    def secrets_held(self, connection):
        return f"{len(connection.secrets())} held (never shown after they are made)"

    @admin.display(description="OAuth client id")
    def client_id(self, connection):
        return connection.application.client_id if connection.application else "—"

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        created = services.connection_create(
            name=obj.name, endpoint_url=obj.endpoint_url, notify_email=obj.notify_email
        )
        obj.pk, obj.user_id, obj.application_id = created.connection.pk, created.connection.user_id, None
        Connection.objects.filter(pk=obj.pk).update(event_types=obj.event_types, enabled=obj.enabled)
        obj.refresh_from_db()
        request.connection_secrets = secrets_shown_once(request, created)  # shown by response_add

    def secrets_page(self, request, *, title: str, secrets, next_url: str):
        """The secrets shown once, in this answer only: a message would carry them in its cookie
        (signed, not encrypted) to the browser's store and every proxy log of Cookie headers. Never
        cached: the admin's views answer `Cache-Control: no-store`."""
        context = {
            **self.admin_site.each_context(request),
            "title": title,
            "secrets": secrets,
            "next_url": next_url,
            "media": self.media,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/connector/connection/secrets_once.html", context)

    def response_add(self, request, obj, post_url_continue=None):
        secrets = getattr(request, "connection_secrets", None)
        if secrets is None:
            return super().response_add(request, obj, post_url_continue)
        change = reverse("admin:connector_connection_change", args=[obj.pk])
        return self.secrets_page(request, title=f"{obj.name}: its credentials", secrets=secrets, next_url=change)

    @admin.action(description="Replay the failed events", permissions=["change"])
    def replay_failed(self, request, queryset):
        events = Event.objects.filter(connection__in=queryset, state=EventState.FAILED)
        count = sum(services.event_replay(event_id=pk) for pk in events.values_list("pk", flat=True))
        self.message_user(request, f"{count} event(s) will be sent again.")

    @admin.action(description="Replay everything since (the time below)", permissions=["change"])
    def replay_since(self, request, queryset):
        since = action_value(request, "since")
        if since is None:
            self.message_user(request, "Give the time to replay from.", messages.ERROR)
            return
        try:
            count = sum(services.events_replay_since(connection_id=c.pk, since=since) for c in queryset)
        except ApplicationError as refusal:
            self.message_user(request, refusal.message, messages.ERROR)
            return
        self.message_user(request, f"{count} event(s) will be sent again, oldest first.")

    @admin.action(description="Enable (send what waits)", permissions=["change"])
    def enable(self, request, queryset):
        for connection in queryset:
            services.connection_enable(connection_id=connection.pk)
        self.message_user(request, "Enabled: their waiting events go out now.")

    @admin.action(description="Move a product to this connection (the product below)", permissions=["change"])
    def product_move_here(self, request, queryset):
        product = action_value(request, "product")
        if product is None or queryset.count() != 1:
            self.message_user(request, "Select one connection and the product to move to it.", messages.ERROR)
            return
        connection = queryset.get()
        try:
            previous = services.product_move(product_id=product.pk, connection_id=connection.pk)
        except ApplicationError as refusal:
            self.message_user(request, refusal.message, messages.ERROR)
            return
        was = f" (from {previous}, with its open orders)" if previous else ""
        self.message_user(request, f"{product.name} is worked by {connection.name} from now on{was}.")

    def has_rotate_permission(self, request):
        """Secrets are their own permission: whoever holds one can forge the events the system accepts."""
        return request.user.has_perm("connector.change_connection") and request.user.has_perm(
            "connector.rotate_connection_secrets"
        )

    @admin.action(description="Rotation: add a new signing secret", permissions=["rotate"])
    def secret_add(self, request, queryset):
        added = [(c.name, services.signing_secret_add(connection_id=c.pk)) for c in queryset]
        rows = format_html_join(
            "",
            '<dt>{}</dt><dd><code class="connection-secret" data-name="{}">{}</code></dd>',
            ((name, "SIGNING_SECRET", secret) for name, secret in added),
        )
        secrets = format_html(
            "New signing secrets: give each to its system now, they are not shown again. Every event is "
            'signed with the old and the new one until the oldest is dropped.<dl class="connection-secrets">{}</dl>',
            rows,
        )
        listing = reverse("admin:connector_connection_changelist")
        return self.secrets_page(request, title="New signing secrets", secrets=secrets, next_url=listing)

    @admin.action(description="Rotation: drop the oldest signing secret", permissions=["rotate"])
    def secret_drop_oldest(self, request, queryset):
        for connection in queryset:
            try:
                services.signing_secret_drop_oldest(connection_id=connection.pk)
            except ApplicationError as refusal:
                self.message_user(request, refusal.message, messages.ERROR)
                continue
            self.message_user(request, f"{connection.name}: the oldest secret dropped.")


class AttemptInline(admin.TabularInline):
    model = EventAttempt
    extra = 0
    can_delete = False
    fields = readonly_fields = ["started_at", "outcome", "status_code", "duration_ms", "succeeded", "answer"]

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="what came of it")
    def outcome(self, obj):
        return obj.outcome  # the same words as a delivery's tries (`partner.core.models.OutboundTry`)


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["id", "type", "order_link", "connection", "state", "attempts", "next_attempt_at", "created_at"]
    list_filter = ["state", "type", "connection"]
    search_fields = ["message_id", "order__transaction_id", "order__reference_number"]
    list_select_related = ["order", "connection"]
    fields = readonly_fields = [
        "connection",
        "order_link",
        "type",
        "message_id",
        "state",
        "attempts",
        "next_attempt_at",
        "failing_since",
        "delivered_at",
        "last_error",
        "created_at",
        "payload",
    ]
    inlines = [AttemptInline]
    actions = ["replay"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="order")
    def order_link(self, event):
        url = reverse("admin:connector_connectedorder_change", args=[event.order_id])
        return format_html('<a href="{}">{}</a>', url, event.order.reference_number or event.order_id)

    def has_replay_permission(self, request):
        return request.user.has_perm("connector.change_connection")

    @admin.action(description="Replay these events", permissions=["replay"])
    def replay(self, request, queryset):
        count = sum(services.event_replay(event_id=pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} event(s) will be sent again.")


class EventInline(admin.TabularInline):
    model = Event
    fk_name = "order"
    extra = 0
    can_delete = False
    fields = readonly_fields = ["event_link", "type", "state", "attempts", "last_answer", "created_at"]
    ordering = ["id"]

    def has_add_permission(self, request, obj=None):
        return False

    @admin.display(description="event")
    def event_link(self, event):
        return format_html('<a href="{}">{}</a>', reverse("admin:connector_event_change", args=[event.pk]), event.pk)

    @admin.display(description="last attempt")
    def last_answer(self, event):
        attempt = event.tries.order_by("-id").first()
        if attempt is None:
            return "—"
        return f"{attempt.status_code or 'no answer'} in {attempt.duration_ms} ms"


@admin.register(ConnectedOrder)
class ConnectedOrderAdmin(admin.ModelAdmin):
    list_display = ["reference_number", "product_name", "status", "assigned_to", "updated_at"]
    list_filter = ["status"]
    search_fields = ["reference_number", "transaction_id"]
    fields = readonly_fields = ["reference_number", "product_name", "status", "assigned_to", "due_at", "updated_at"]
    inlines = [EventInline]
    actions = ["take_over", "hand_back"]
    change_form_template = "admin/connector/connectedorder/change_form.html"

    def get_queryset(self, request):
        # The orders routed to a connection when they arrived, whatever their product is now.
        return super().get_queryset(request).filter(connector_route__isnull=False)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def _take_over(self, request, order_id) -> bool:
        try:
            services.order_take_over(order_id=order_id, user=request.user)
        except ApplicationError as refusal:
            self.message_user(request, refusal.message, messages.ERROR)
            return False
        return True

    def has_take_over_permission(self, request):
        return request.user.has_perm("connector.take_over_connectedorder")

    @admin.action(
        description="Take over by hand (staff work it; the system's answers are refused)", permissions=["take_over"]
    )
    def take_over(self, request, queryset):
        taken = sum(self._take_over(request, pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, f"{taken} order(s) are yours to work in “Orders to work”.")

    @admin.action(
        description="Hand back to the system (taken-over orders: its answers are accepted again)",
        permissions=["take_over"],
    )
    def hand_back(self, request, queryset):
        handed = 0
        for pk in queryset.values_list("pk", flat=True):
            try:
                services.order_hand_back(order_id=pk, user=request.user)
                handed += 1
            except ApplicationError as refusal:
                self.message_user(request, refusal.message, messages.ERROR)
        self.message_user(request, f"{handed} order(s) handed back to their system.")

    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        # The one POST of this page is the take-over: a service call, never a save of the order.
        if request.method == "POST" and object_id is not None:
            if not self.has_take_over_permission(request):
                raise PermissionDenied
            known = self.get_queryset(request).filter(pk=object_id).exists()
            if "_take_over" in request.POST and known:  # asked: confirm first, as the queue's take-over
                return redirect(f"{request.path}?take_over=confirm")
            if "_take_over_confirmed" in request.POST and known and self._take_over(request, int(object_id)):
                return redirect(reverse("admin:fulfillment_stafforder_change", args=[object_id]))
            return redirect(request.path)
        extra_context = {**(extra_context or {}), "may_take_over": self.has_take_over_permission(request)}
        if request.GET.get("take_over") == "confirm":
            extra_context["confirm_take_over"] = True
        return super().changeform_view(request, object_id, form_url, extra_context)

    def has_change_permission(self, request, obj=None):
        return False
