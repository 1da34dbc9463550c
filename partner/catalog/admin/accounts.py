"""Admin pages of partner companies (with their write-only credential values) and partner accounts.

A partner account's password is stored hashed; a company credential's value is
stored encrypted. Both are typed in and only ever shown as "set".
"""

from django import forms
from django.contrib import admin

from ..models import CompanyCredential, PartnerAccount, PartnerCompany
from .write_only import NOT_SET, SET


class CompanyCredentialForm(forms.ModelForm):
    new_value = forms.CharField(
        label="Value",
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: type a value to set or replace it.",
    )

    class Meta:
        model = CompanyCredential
        fields = ["key", "secret"]

    def clean(self):
        cleaned = super().clean()
        if not self.instance.pk and not cleaned.get("new_value") and not cleaned.get("DELETE"):
            self.add_error("new_value", "A value is required for a new credential.")
        return cleaned

    def has_changed(self):
        return super().has_changed() or bool(self.data.get(self.add_prefix("new_value")))

    def save(self, commit=True):
        credential = super().save(commit=False)
        if self.cleaned_data.get("new_value"):
            credential.value = self.cleaned_data["new_value"]
        if commit:
            credential.save()
        return credential


class CompanyCredentialInline(admin.TabularInline):
    model = CompanyCredential
    form = CompanyCredentialForm
    extra = 0
    fields = ["key", "secret", "value_state", "new_value"]
    readonly_fields = ["value_state"]

    @admin.display(description="stored value")
    def value_state(self, obj):
        return SET if obj and obj.pk and obj.value else NOT_SET


@admin.register(PartnerCompany)
class PartnerCompanyAdmin(admin.ModelAdmin):
    list_display = ["name", "code", "active", "account_count"]
    list_filter = ["active"]
    search_fields = ["name", "code"]
    inlines = [CompanyCredentialInline]

    @admin.display(description="accounts")
    def account_count(self, obj):
        return obj.accounts.count()


class PartnerAccountForm(forms.ModelForm):
    password1 = forms.CharField(
        label="Password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored hashed. Leave empty to keep the current password.",
    )
    password2 = forms.CharField(
        label="Password (again)",
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )

    class Meta:
        model = PartnerAccount
        fields = ["username", "company", "active"]

    def clean(self):
        cleaned = super().clean()
        first, second = cleaned.get("password1"), cleaned.get("password2")
        if first != second:
            self.add_error("password2", "The two passwords differ.")
        if not self.instance.pk and not first:
            self.add_error("password1", "A new account needs a password.")
        return cleaned

    def save(self, commit=True):
        account = super().save(commit=False)
        if self.cleaned_data.get("password1"):
            account.set_password(self.cleaned_data["password1"])
        if commit:
            account.save()
        return account


@admin.register(PartnerAccount)
class PartnerAccountAdmin(admin.ModelAdmin):
    form = PartnerAccountForm
    list_display = ["username", "company", "active", "password_state", "last_checked_at"]
    list_filter = ["active", "company"]
    search_fields = ["username", "company__name"]
    readonly_fields = ["password_state", "last_checked_at", "created_at", "updated_at"]
    fields = [
        "username",
        "company",
        "active",
        "password_state",
        "password1",
        "password2",
        "last_checked_at",
        "created_at",
        "updated_at",
    ]

    @admin.display(description="password")
    def password_state(self, obj):
        return SET if obj and obj.password else NOT_SET
