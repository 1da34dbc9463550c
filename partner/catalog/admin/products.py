"""Admin pages of the catalog's products and their credential definitions.

List, search, filter and edit with validation (the form: `product_form`; entitlements
and webhooks as rows: `product_rows`); "pull from the service", "push to the service"
(after a page showing what differs), and "allow/deny lender instance" (asking the
instance URN). The signing secret is write-only.
"""

import json

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from partner.core.encryption import Undecryptable
from partner.core.errors import ApplicationError

from .. import services, validation
from ..mapping import product_to_service
from ..models import CredentialDefinition, Product
from ..product_cache import catalog_cache_drop
from .product_form import ProductForm
from .write_only import NOT_SET, SET


class CredentialDefinitionInline(admin.TabularInline):
    model = CredentialDefinition
    extra = 0
    fields = ["position", "key", "type", "title", "minimum", "maximum", "pattern", "secret", "scope", "required"]


class InstanceForm(forms.Form):
    instance = forms.CharField(
        label="Lender instance URN",
        help_text="For example a lender test instance for acceptance testing.",
        widget=forms.TextInput(attrs={"size": 50}),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        from partner.platform.urns import instance_urn

        self.fields["instance"].widget.attrs["placeholder"] = instance_urn("<instance id>")

    def clean_instance(self):
        value = self.cleaned_data["instance"].strip()
        problem = validation.instance_urn_problem(value)
        if problem:
            raise forms.ValidationError(problem)
        return value


def _ids_param(queryset) -> str:
    return ",".join(str(pk) for pk in queryset.values_list("pk", flat=True))


@admin.register(Product)
class ProductAdmin(admin.ModelAdmin):
    form = ProductForm
    inlines = [CredentialDefinitionInline]
    list_display = [
        "name",
        "listing_name",
        "service_id",
        "environment",
        "status",
        "fulfiller",
        "signing_secret_short",
        "pulled_at",
        "pushed_at",
        "unpushed_changes",
    ]
    list_filter = ["environment", "status", "integration_type", "fulfiller", "unpushed_changes"]
    search_fields = ["name", "listing_name", "service_id", "partner_id"]
    readonly_fields = [
        "signing_secret_state",
        "raw_pretty",
        "entitlements_json",
        "pulled_at",
        "pushed_at",
        "unpushed_changes",
        "created_at",
        "updated_at",
    ]
    actions = ["pull_from_service", "push_to_service", "allow_instance", "deny_instance"]
    fieldsets = [
        (None, {"fields": ["service_id", "partner_id", "name", "listing_name", "environment", "status"]}),
        ("Addresses", {"fields": ["interface_url", "admin_interface_url", "integration_type"]}),
        (
            "Requests and tags",
            {"fields": ["request_types", "tags_workflows", "tags_categories", "tags_applications", "extension_limit"]},
        ),
        (
            "Lender access",
            {
                "fields": ["access_allow", "access_deny"],
                "description": "Which lenders' host instances may order the product (entitlements.access).",
            },
        ),
        (
            "Data entitlements",
            {
                "fields": ["data_origin", "data_transaction"],
                "description": "What the product may read of a lender's data, and what its responses may carry "
                "and do (entitlements.data).",
            },
        ),
        ("Webhooks", {"fields": ["webhooks"]}),
        (
            "Order form",
            {"fields": ["fee", "turnaround_hours"], "description": "Shown to the lender on the order form."},
        ),
        (
            "Staff delivery form",
            {
                "classes": ["collapse"],
                "fields": ["response_form"],
                "description": "What staff fill in when they deliver an order of this product, for the loan fields "
                "the response may carry that the seed does not describe (the subject property it does).",
            },
        ),
        (
            "Our settings",
            {"fields": ["fulfiller", "signing_secret_state", "new_signing_secret", "clear_signing_secret"]},
        ),
        (
            "Entitlements and webhooks as JSON",
            {
                "classes": ["collapse"],
                "fields": ["entitlements_json"],
                "description": "Read only: what the rows above are stored as, and what a push sends.",
            },
        ),
        (
            "Service record",
            {
                "classes": ["collapse"],
                "fields": [
                    "service_created",
                    "service_created_by",
                    "pulled_at",
                    "pushed_at",
                    "unpushed_changes",
                    "raw_pretty",
                    "created_at",
                    "updated_at",
                ],
            },
        ),
    ]

    class Media:
        css = {"all": ["catalog/product_admin.css"]}
        js = ["catalog/product_rows.js"]

    @admin.display(description="signing secret")
    def signing_secret_state(self, obj):
        if obj and isinstance(obj.signing_secret, Undecryptable):
            return "cannot be decrypted: type it again"
        if obj and obj.has_signing_secret:
            return f"{SET}; the deployment's SVC_SIGNING_SECRETS apply too"
        if settings.SVC_SIGNING_SECRETS:
            return f"{NOT_SET}: its webhooks verify with the deployment's SVC_SIGNING_SECRETS"
        return f"{NOT_SET}: no secret verifies its webhooks (set one, or SVC_SIGNING_SECRETS)"

    @admin.display(description="signing secret")
    def signing_secret_short(self, obj):
        """The list's column: a word or two; the product's page says the whole of it (`signing_secret_state`)."""
        if isinstance(obj.signing_secret, Undecryptable):
            return format_html('<span title="{}">unreadable</span>', self.signing_secret_state(obj))
        if obj.has_signing_secret:
            return format_html('<span title="{}">{}</span>', self.signing_secret_state(obj), SET)
        shown = "deployment's" if settings.SVC_SIGNING_SECRETS else "none"
        return format_html('<span title="{}">{}</span>', self.signing_secret_state(obj), shown)

    @admin.display(description="last service copy")
    def raw_pretty(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.raw, indent=2, sort_keys=True)) if obj else ""

    @admin.display(description="entitlements and webhooks")
    def entitlements_json(self, obj):
        if not obj or not obj.pk:
            return ""
        data = product_to_service(obj)
        shown = {"entitlements": data.get("entitlements"), "webhooks": data.get("webhooks")}
        return format_html('<pre class="product-json-view">{}</pre>', json.dumps(shown, indent=2))

    # -- extra pages ---------------------------------------------------------

    # Service fields edited here wait for a push, and the periodic pull must not undo them: a
    # save that changes what a push would send marks the product. The copy before the save
    # travels on the instance (the admin object is shared between requests).
    def save_model(self, request, obj, form, change):
        obj._service_copy_before = product_to_service(Product.objects.get(pk=obj.pk)) if change else None
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        product = form.instance
        before = getattr(product, "_service_copy_before", None)
        if before is None or product_to_service(product) != before:  # credential definitions included
            Product.objects.filter(pk=product.pk).update(unpushed_changes=True)
            catalog_cache_drop()  # an update sends no signal; the cached products carry this flag too

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("pull/", wrap(self.pull_view), name="catalog_product_pull"),
            path("push/", wrap(self.push_view), name="catalog_product_push"),
            path("access/<str:mode>/", wrap(self.access_view), name="catalog_product_access"),
            *super().get_urls(),
        ]

    def _require_change(self, request):
        if not self.has_change_permission(request):
            raise PermissionDenied

    def _selected(self, request):
        ids = [part for part in request.GET.get("ids", request.POST.get("ids", "")).split(",") if part.isdigit()]
        return list(Product.objects.filter(pk__in=ids).order_by("name"))

    def _changelist(self):
        return HttpResponseRedirect(reverse("admin:catalog_product_changelist"))

    def pull_view(self, request):
        self._require_change(request)
        if request.method != "POST":
            return self._changelist()
        try:
            result = services.products_pull()
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            self.message_user(request, f"Pulled from the service: {result}.", messages.SUCCESS)
        return self._changelist()

    def push_view(self, request):
        self._require_change(request)
        products = self._selected(request)
        if not products:
            self.message_user(request, "No product chosen.", messages.WARNING)
            return self._changelist()
        if request.method == "POST" and request.POST.get("confirm") == "yes":
            for product in products:
                try:
                    services.product_push(product)
                except ApplicationError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                else:
                    self.message_user(request, f"Pushed {product.name} to the service.", messages.SUCCESS)
            return self._changelist()
        diffs, problems = [], []
        for product in products:
            try:
                diffs.append(services.product_diff(product))
            except ApplicationError as exc:
                problems.append(exc.message)
        context = {
            **self.admin_site.each_context(request),
            "title": "Push to the service",
            "opts": self.model._meta,
            "diffs": diffs,
            "problems": problems,
            "ids": ",".join(str(p.pk) for p in products),
        }
        return TemplateResponse(request, "admin/catalog/product/push_confirm.html", context)

    def access_view(self, request, mode):
        self._require_change(request)
        if mode not in ("allow", "deny"):
            return self._changelist()
        products = self._selected(request)
        if not products:
            self.message_user(request, "No product chosen.", messages.WARNING)
            return self._changelist()
        form = InstanceForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            instance = form.cleaned_data["instance"]
            for product in products:
                try:
                    if mode == "allow":
                        services.product_access_patch(product, allow_add=[instance])
                    else:
                        services.product_access_patch(product, deny_add=[instance])
                except ApplicationError as exc:
                    self.message_user(request, exc.message, messages.ERROR)
                else:
                    verb = "Allowed" if mode == "allow" else "Denied"
                    self.message_user(request, f"{verb} {instance} for {product.name}.", messages.SUCCESS)
            return self._changelist()
        context = {
            **self.admin_site.each_context(request),
            "title": f"{'Allow' if mode == 'allow' else 'Deny'} a lender instance",
            "opts": self.model._meta,
            "form": form,
            "mode": mode,
            "products": products,
            "ids": ",".join(str(p.pk) for p in products),
        }
        return TemplateResponse(request, "admin/catalog/product/access_form.html", context)

    # -- actions -------------------------------------------------------------

    @admin.action(description="Pull every product from the service")
    def pull_from_service(self, request, queryset):
        try:
            result = services.products_pull()
        except ApplicationError as exc:
            self.message_user(request, exc.message, messages.ERROR)
        else:
            self.message_user(request, f"Pulled from the service: {result}.", messages.SUCCESS)

    @admin.action(description="Push to the service (shows the differences first)")
    def push_to_service(self, request, queryset):
        return HttpResponseRedirect(f"{reverse('admin:catalog_product_push')}?ids={_ids_param(queryset)}")

    @admin.action(description="Allow a lender instance")
    def allow_instance(self, request, queryset):
        url = reverse("admin:catalog_product_access", args=["allow"])
        return HttpResponseRedirect(f"{url}?ids={_ids_param(queryset)}")

    @admin.action(description="Deny a lender instance")
    def deny_instance(self, request, queryset):
        url = reverse("admin:catalog_product_access", args=["deny"])
        return HttpResponseRedirect(f"{url}?ids={_ids_param(queryset)}")
