"""The staff's work queue in the admin ("Orders to work"): staff-worked orders, by due time.

The list shows each order's reference, product, lender company, state (in the staff's words), age,
due time (marked when overdue) and who works it; open orders unless another state is chosen;
filters by state, overdue, assignment, product and company;
search by reference, loan number or transaction id. An order's page is the staff's own
(`admin_staff_views`: the request, the timeline and the actions), not a model form; nothing is
added or deleted here.

Permissions are the orders' (or the proxy's own, for a group that works orders only): view to
see the queue, the page and the documents; change to act.
"""

from functools import partial

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import HttpResponseNotAllowed
from django.urls import path
from django.utils.html import format_html

from partner.fulfillment.models import OrderStatus, StaffOrder
from partner.fulfillment.staff import views
from partner.fulfillment.staff.selectors import (
    age_text,
    by_staff_or_nobody,
    due_text,
    order_overdue,
    overdue_orders,
    staff_attention,
    status_label,
)


class ProductFilter(admin.AllValuesFieldListFilter):
    """The products of the orders to work."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = "product"


class DefaultedFilter(admin.SimpleListFilter):
    """A list filter with a default choice: no parameter means the default, so Django's own "All" (no
    parameter) would not be all, and every choice, "All" included, is one of `lookups`."""

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }


class CompanyFilter(admin.SimpleListFilter):
    """The lender company of the account that ordered (the companies with orders to work)."""

    title = "lender company"
    parameter_name = "company"

    def lookups(self, request, model_admin):
        rows = (
            model_admin.get_queryset(request)
            .exclude(ordered_by__company=None)
            .values_list("ordered_by__company_id", "ordered_by__company__name")
            .distinct()
            .order_by("ordered_by__company__name")
        )
        return [(str(pk), name) for pk, name in rows]

    def queryset(self, request, queryset):
        return queryset.filter(ordered_by__company_id=self.value()) if self.value() else queryset


class OverdueFilter(admin.SimpleListFilter):
    """Open orders past their due time."""

    title = "due"
    parameter_name = "overdue"

    def lookups(self, request, model_admin):
        return [("yes", "Overdue")]

    def queryset(self, request, queryset):
        return overdue_orders(queryset) if self.value() == "yes" else queryset


class AssignedFilter(admin.SimpleListFilter):
    title = "assigned to"
    parameter_name = "assigned"

    def lookups(self, request, model_admin):
        return [("me", "Me"), ("nobody", "Nobody")]

    def queryset(self, request, queryset):
        if self.value() == "me":
            return queryset.filter(assigned_to=request.user)
        if self.value() == "nobody":
            return queryset.filter(assigned_to__isnull=True)
        return queryset


class WorkedByFilter(DefaultedFilter):
    """Orders a partner's own system works stay off the queue until they need staff (past due, a
    failed delivery) or a staff member takes one over; "Partner systems" lists them."""

    title = "worked by"
    parameter_name = "worked"
    STAFF = "staff"

    def lookups(self, request, model_admin):
        return [
            (self.STAFF, "Staff (and systems' orders that need staff)"),
            ("system", "Partner systems"),
            ("all", "All"),
        ]

    def value(self):
        return super().value() or self.STAFF

    def queryset(self, request, queryset):
        if self.value() == "system":
            return queryset.exclude(by_staff_or_nobody())
        if self.value() == "all":
            return queryset
        return staff_attention(queryset)


class StateFilter(DefaultedFilter):
    """Where the orders stand, in the staff's words; open orders (with staff) unless another is chosen."""

    title = "state"
    parameter_name = "state"
    OPEN = "open"
    ALL = "all"
    STATES = {
        OPEN: ("Open: with staff", [OrderStatus.WITH_STAFF]),
        "arriving": ("Arriving", [OrderStatus.VALIDATION_REQUESTED, OrderStatus.IN_PROGRESS]),
        "delivered": ("Delivered: waiting for the platform", [OrderStatus.RESPONSE_DELIVERED]),
        "completed": ("Completed", [OrderStatus.REQUEST_COMPLETED]),
        "declined": ("Declined", [OrderStatus.DECLINED]),
        "failed": ("Failed", [OrderStatus.FAILED]),
    }

    def lookups(self, request, model_admin):
        return [(key, label) for key, (label, _) in self.STATES.items()] + [(self.ALL, "All")]

    def value(self):
        return super().value() or self.OPEN

    def queryset(self, request, queryset):
        if self.value() == self.ALL or self.value() not in self.STATES:
            return queryset
        return queryset.filter(status__in=self.STATES[self.value()][1])


@admin.register(StaffOrder)
class StaffOrderAdmin(admin.ModelAdmin):
    list_display = ["reference", "product", "company", "state", "age", "due", "assigned"]
    list_display_links = ["reference"]
    list_filter = [
        StateFilter,
        WorkedByFilter,
        OverdueFilter,
        AssignedFilter,
        ("product_name", ProductFilter),
        CompanyFilter,
    ]
    list_select_related = ["ordered_by__company", "assigned_to"]
    search_fields = ["reference_number", "loan_number", "transaction_id"]
    search_help_text = "Reference, loan number or transaction id."
    ordering = [F("due_at").asc(nulls_last=True), "created_at"]
    actions = None
    list_per_page = 50

    def get_queryset(self, request):
        # The lender's company and who works the order are on every page of an order (and each row
        # of the queue): read with the order, not one query each.
        return super().get_queryset(request).filter(staff_worked=True).select_related(*self.list_select_related)

    # Permissions: the orders', or this proxy's own.

    def _may(self, request, action: str) -> bool:
        user = request.user
        return user.has_perm(f"fulfillment.{action}_order") or user.has_perm(f"fulfillment.{action}_stafforder")

    def has_view_permission(self, request, obj=None):
        return self._may(request, "view") or self._may(request, "change")

    def has_change_permission(self, request, obj=None):
        return self._may(request, "change")

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    # The columns.

    @admin.display(description="reference", ordering="reference_number")
    def reference(self, obj):
        return format_html('<span style="white-space: nowrap">{}</span>', obj.reference_number or obj.transaction_id)

    @admin.display(description="product", ordering="product_name")
    def product(self, obj):
        return obj.product_name

    @admin.display(description="lender company", ordering="ordered_by__company__name")
    def company(self, obj):
        account = obj.ordered_by
        return account.company.name if account and account.company else "–"

    @admin.display(description="state", ordering="status")
    def state(self, obj):
        return status_label(obj)

    @admin.display(description="age", ordering="created_at")
    def age(self, obj):
        return age_text(obj)

    @admin.display(description="due", ordering="due_at")
    def due(self, obj):
        if obj.due_at is None:
            return "–"
        if order_overdue(obj):
            return format_html(
                '<span class="staff-overdue" style="color: var(--error-fg); font-weight: bold" title="{}">'
                "overdue: {}</span>",
                f"{obj.due_at:%Y-%m-%d %H:%M} UTC",
                due_text(obj),
            )
        closed = obj.status != OrderStatus.WITH_STAFF
        return format_html(
            '<span title="{}">{}</span>', f"{obj.due_at:%Y-%m-%d %H:%M} UTC", "–" if closed else due_text(obj)
        )

    @admin.display(description="assigned to", ordering="assigned_to__username")
    def assigned(self, obj):
        return obj.assigned_to.get_username() if obj.assigned_to else "–"

    # The queue's title, the order's page and its actions.

    def changelist_view(self, request, extra_context=None):
        return super().changelist_view(request, {"title": "Orders to work", **(extra_context or {})})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The staff's order page instead of a model form (its actions post to their own URLs)."""
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        if not self.has_view_permission(request):
            raise PermissionDenied
        order = self.get_object(request, unquote(object_id))
        if order is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        return views.order_page(self, request, order)

    def get_urls(self):
        def url(route, view, name):
            return path(
                route,
                self.admin_site.admin_view(partial(view, model_admin=self)),
                name=f"fulfillment_stafforder_{name}",
            )

        return [
            url("<int:order_id>/take/", views.take_view, "take"),
            url("<int:order_id>/take-over/", views.take_over_view, "take_over"),
            url("<int:order_id>/release/", views.release_view, "release"),
            url("<int:order_id>/status-update/", views.status_update_view, "status_update"),
            url("<int:order_id>/documents/", views.upload_view, "upload"),
            url("<int:order_id>/deliver/", views.deliver_view, "deliver"),
            url("<int:order_id>/decline/", views.decline_view, "decline"),
            url("documents/<int:document_id>/remove/", views.document_remove_view, "document_remove"),
            url("documents/<int:document_id>/replace/", views.document_replace_view, "document_replace"),
            url("documents/<int:document_id>/download/", views.document_download_view, "document_download"),
            url("deliveries/<int:delivery_id>/retry/", views.delivery_retry_view, "delivery_retry"),
            *super().get_urls(),
        ]
