"""The product's edit form: the service's fields, ours, and the write-only signing secret.

Labels and help texts come from the model. The JSON list columns are edited as
rows (`product_rows`) or as a comma-separated box (`rows.StringListField`); what
is stored, and so what a push sends, is the same JSON as before.
"""

from django import forms

from ..fulfiller_keys import fulfiller_choices
from ..models import Product
from .product_rows import InstanceRowsField, TransactionEntitlementRowsField, WebhookRowsField
from .rows import RowsField, StringLinesField, StringListField


class ProductForm(forms.ModelForm):
    new_signing_secret = forms.CharField(
        label="Signing secret",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Type a new webhook signing secret to replace the stored one; leave empty to keep it.",
    )
    clear_signing_secret = forms.BooleanField(label="Remove the signing secret", required=False)

    class Meta:
        model = Product
        fields = [
            "service_id",
            "partner_id",
            "name",
            "listing_name",
            "request_types",
            "environment",
            "status",
            "interface_url",
            "admin_interface_url",
            "integration_type",
            "tags_workflows",
            "tags_categories",
            "tags_applications",
            "extension_limit",
            "access_allow",
            "access_deny",
            "data_origin",
            "data_transaction",
            "webhooks",
            "service_created",
            "service_created_by",
            "fulfiller",
            "fee",
            "turnaround_hours",
            "response_form",
        ]
        field_classes = {
            "request_types": StringListField,
            "tags_workflows": StringListField,
            "tags_categories": StringListField,
            "tags_applications": StringLinesField,
            "access_allow": InstanceRowsField,
            "access_deny": InstanceRowsField,
            "data_transaction": TransactionEntitlementRowsField,
            "webhooks": WebhookRowsField,
        }
        widgets = {
            "data_origin": forms.Textarea(attrs={"rows": 3, "class": "product-json"}),
            "response_form": forms.Textarea(attrs={"rows": 16, "class": "product-json", "spellcheck": "false"}),
        }

    PLACEHOLDERS = {
        "request_types": "NEW_REQUEST, ACCEPTED_ORDER",
        "tags_workflows": "automated, interactive",
        "tags_categories": "APPRAISAL",
        "data_origin": '{"fields": ["loanNumber", "property"]}',
    }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if isinstance(field, RowsField):  # the rows start from what is stored
                field.widget.stored = self.get_initial_for_field(field, name)
            if name in self.PLACEHOLDERS:
                field.widget.attrs.setdefault("placeholder", self.PLACEHOLDERS[name])
        choices = fulfiller_choices()
        if "fulfiller" in self.fields:
            current = self.instance.fulfiller if self.instance else None
            if current and current not in {key for key, _ in choices}:
                choices = [*choices, (current, f"{current} (not registered)")]
            field = self.fields["fulfiller"]
            self.fields["fulfiller"] = forms.ChoiceField(
                choices=choices, initial=field.initial, label=field.label, help_text=field.help_text
            )

    def save(self, commit=True):
        product = super().save(commit=False)
        if self.cleaned_data.get("clear_signing_secret"):
            product.signing_secret = ""
        elif self.cleaned_data.get("new_signing_secret"):
            product.signing_secret = self.cleaned_data["new_signing_secret"]
        if commit:
            product.save()
            self.save_m2m()
        return product
