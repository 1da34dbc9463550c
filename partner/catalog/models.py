"""Products as the service knows them, their credential definitions, and our partner accounts.

A `Product` mirrors the spec's Product object field by field (scalars as
columns, the open nested parts as validated JSON) and keeps `raw`, the last
copy the service gave us, so that a push sends back every field we do not
model. Local-only settings sit beside it: the fulfiller that does its work
and the webhook signing secret (encrypted at rest).

`PartnerCompany` and `PartnerAccount` are the lenders who buy from us: an
account's password is hashed with Django's hashers; a company's credential
values (which we may have to send on) are encrypted.
"""

from django.contrib.auth.hashers import check_password, make_password
from django.core.exceptions import ValidationError
from django.db import models

from partner.core.encryption import EncryptedTextField
from partner.core.models import TimeStampedModel

from . import response_forms, validation
from .fulfiller_keys import fulfiller_known, fulfiller_main


class Product(TimeStampedModel):
    """One product registered with the service (one per environment)."""

    service_id = models.CharField(
        "service id", max_length=200, unique=True, help_text="The product's id on the service (id)."
    )
    partner_id = models.CharField(
        "partner id", max_length=200, blank=True, help_text="Our partner id on the service (partnerId)."
    )
    name = models.CharField(
        max_length=200,
        unique=True,
        help_text="The product's name on the service (name); its webhooks carry it as their instance id.",
    )
    listing_name = models.CharField(
        "listing name", max_length=300, blank=True, help_text="The name lenders see in the host (listingName)."
    )
    request_types = models.JSONField(
        "request types",
        default=list,
        blank=True,
        help_text="The kinds of request a lender can send, like NEW_REQUEST (requestTypes).",
    )
    environment = models.CharField(
        max_length=100, blank=True, help_text="The service's environment of the product, like sandbox (environment)."
    )
    status = models.CharField(
        max_length=100, blank=True, help_text="Its status on the service, like development (status)."
    )
    interface_url = models.CharField(
        "interface address",
        max_length=500,
        blank=True,
        help_text="The page the host shows lenders: our panel (interfaceUrl).",
    )
    admin_interface_url = models.CharField(
        "admin interface address",
        max_length=500,
        blank=True,
        help_text="The page the host opens to administer the product (adminInterfaceUrl).",
    )
    integration_type = models.CharField(
        "integration type",
        max_length=100,
        blank=True,
        help_text="How the service calls us, like ASYNC (integrationType).",
    )
    tags_workflows = models.JSONField(
        "workflows",
        default=list,
        blank=True,
        help_text="How a lender works with the product: automated, interactive (tags.workflows).",
    )
    tags_categories = models.JSONField(
        "categories", default=list, blank=True, help_text="Where the host lists it, like APPRAISAL (tags.categories)."
    )
    tags_applications = models.JSONField(
        "host applications",
        default=list,
        blank=True,
        help_text="The names of the host applications it works in (tags.applications).",
    )
    extension_limit = models.IntegerField(
        "extension limit", null=True, blank=True, help_text="Sent as extensionLimit; empty: not sent."
    )
    access_allow = models.JSONField(
        "allowed lender instances",
        default=list,
        blank=True,
        help_text="The lenders' host instances that may order the product (entitlements.access.allow).",
    )
    access_deny = models.JSONField(
        "denied lender instances",
        default=list,
        blank=True,
        help_text="The instances refused it; one cannot be both allowed and denied (entitlements.access.deny).",
    )
    data_origin = models.JSONField(
        "origin data",
        default=dict,
        blank=True,
        help_text="What the product may read of the lender's origin (entitlements.data.origin), a JSON object.",
    )
    data_transaction = models.JSONField(
        "transaction entitlements",
        default=list,
        blank=True,
        help_text="Per request type, what a transaction's request and our response may carry, and the actions "
        "our response may take (entitlements.data.transaction).",
    )
    webhooks = models.JSONField(
        "webhook subscriptions",
        default=list,
        blank=True,
        help_text="Where the service sends the notifications of each resource (webhooks).",
    )
    service_created = models.CharField(
        "created on the service", max_length=100, blank=True, help_text="When the service created it (created)."
    )
    service_created_by = models.CharField(
        "created by", max_length=300, blank=True, help_text="Who created it, as a URN (createdBy)."
    )

    raw = models.JSONField(
        "last service copy", default=dict, blank=True, help_text="The last copy the service gave us."
    )
    pulled_at = models.DateTimeField("last pulled", null=True, blank=True)
    pushed_at = models.DateTimeField("last pushed", null=True, blank=True)
    unpushed_changes = models.BooleanField(
        "unpushed changes",
        default=False,
        help_text="Service fields edited here since the last push or pull: the periodic pull leaves the "
        "product alone until it is pushed (a pull by hand takes the service's copy).",
    )

    fulfiller = models.CharField(
        max_length=100, default=fulfiller_main, help_text="Which of our fulfillers does its work."
    )
    fee = models.DecimalField(
        max_digits=10,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="What the lender pays for one order, in US dollars; shown on the order form. Empty: not shown.",
    )
    turnaround_hours = models.PositiveIntegerField(
        "turnaround (hours)",
        null=True,
        blank=True,
        help_text="The turnaround we promise, in hours, shown on the order form: an order is due this long after "
        "it came. Empty: none promised.",
    )
    staff_email = models.EmailField(
        "staff e-mail",
        blank=True,
        help_text="Where staff are told of a new order of a staff-worked product, and of one past due.",
    )
    response_form = models.JSONField(
        "response form",
        default=response_forms.default_response_form,
        blank=True,
        help_text="What staff fill in when they deliver, for the loan fields the seed does not describe: a JSON "
        'Schema {"type": "object", "properties": {<loan field>: {"type": "object", "title": ..., "properties": '
        "{...}}}}, each value with a title (the label staff read) and a description (its help). Drawn as typed "
        "inputs: strings (format date: a date), numbers (format money: US dollars), integers, booleans, enum or "
        "oneOf of const and title (a choice), objects (a group); x-order lists an object's inputs in order. "
        "Checked on save and on every delivery.",
    )
    signing_secret = EncryptedTextField(
        "signing secret", blank=True, default="", help_text="Webhook signing secret (encrypted)."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    def clean(self):
        errors = {}
        self.listing_name = validation.one_line(self.listing_name)
        checks = {
            "request_types": validation.request_types_problems(self.request_types),
            "tags_workflows": validation.string_list_problems(self.tags_workflows),
            "tags_categories": validation.string_list_problems(self.tags_categories),
            "tags_applications": validation.string_list_problems(self.tags_applications),
            "access_allow": validation.instance_urns_problems(self.access_allow),
            "access_deny": validation.instance_urns_problems(self.access_deny),
            "data_origin": [] if isinstance(self.data_origin, dict) else ["Must be a JSON object."],
            "response_form": response_forms.response_form_problems(self.response_form),
            "data_transaction": validation.data_transaction_problems(self.data_transaction),
            "webhooks": validation.webhooks_problems(self.webhooks),
            "interface_url": validation.url_problems(self.interface_url),
            "admin_interface_url": validation.url_problems(self.admin_interface_url),
        }
        for field, problems in checks.items():
            if problems:
                errors[field] = problems
        if not errors.get("access_allow") and not errors.get("access_deny"):
            both = sorted(set(self.access_allow or []) & set(self.access_deny or []))
            if both:
                errors["access_deny"] = [f"Instance {u} is both allowed and denied." for u in both]
        if self.extension_limit is not None and self.extension_limit < 0:
            errors["extension_limit"] = ["Must not be negative."]
        if not fulfiller_known(self.fulfiller):
            errors["fulfiller"] = [f"Unknown fulfiller {self.fulfiller!r}."]
        if errors:
            raise ValidationError(errors)

    @property
    def has_signing_secret(self) -> bool:
        return bool(self.signing_secret)


class CredentialDefinition(models.Model):
    """A credential property the product asks of its users (spec: Credential definition)."""

    class Scope(models.TextChoices):
        USER = "user", "user"
        COMPANY = "company", "company"

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="credential_definitions")
    key = models.CharField("property id", max_length=100, help_text="The credential property's id (id).")
    type = models.CharField(max_length=50, default="string", help_text="Its value type, like string.")
    title = models.CharField(max_length=200, blank=True, help_text="The label lenders see.")
    minimum = models.PositiveIntegerField("min. length", null=True, blank=True, help_text="Shortest length allowed.")
    maximum = models.PositiveIntegerField("max. length", null=True, blank=True, help_text="Longest length allowed.")
    pattern = models.CharField(max_length=500, blank=True, help_text="Regular expression the value must match.")
    secret = models.BooleanField(default=False, help_text="Confidential: typed in, never shown back.")
    scope = models.CharField(
        max_length=20,
        choices=Scope.choices,
        default=Scope.USER,
        help_text="Whose value it is: a user's or the company's.",
    )
    required = models.BooleanField(default=False)
    position = models.PositiveIntegerField("order", default=0, help_text="Where it comes in the list.")

    class Meta:
        ordering = ["product", "position", "key"]
        constraints = [models.UniqueConstraint(fields=["product", "key"], name="catalog_credential_definition_key")]

    def __str__(self):
        return f"{self.product.name}: {self.key}"

    def clean(self):
        errors = {}
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            errors["maximum"] = ["Must not be less than the minimum."]
        problems = validation.pattern_problems(self.pattern)
        if problems:
            errors["pattern"] = problems
        if errors:
            raise ValidationError(errors)

    def as_service_dict(self) -> dict:
        data = {"id": self.key, "type": self.type, "title": self.title}
        if self.minimum is not None:
            data["minimum"] = self.minimum
        if self.maximum is not None:
            data["maximum"] = self.maximum
        if self.pattern:
            data["pattern"] = self.pattern
        data.update({"secret": self.secret, "scope": self.scope, "required": self.required})
        return data


class PartnerCompany(TimeStampedModel):
    """A lender company that buys from us."""

    name = models.CharField(max_length=200, unique=True)
    code = models.CharField(
        max_length=100,
        blank=True,
        help_text="The company's code; the value expected for company-scope credentials it has not set otherwise "
        "(non-secret ones only).",
    )
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "partner companies"

    def __str__(self):
        return self.name

    def credential_value(self, key: str, *, secret: bool) -> str | None:
        """The value this company expects for a company-scope credential, or None when it has none."""
        stored = self.credentials.filter(key=key).first()
        if stored is not None:
            return stored.value
        if not secret and self.code:
            return self.code
        return None


class CompanyCredential(TimeStampedModel):
    """One company-scope credential value (encrypted: we may have to send it on)."""

    company = models.ForeignKey(PartnerCompany, on_delete=models.CASCADE, related_name="credentials")
    key = models.CharField("credential id", max_length=100)
    value = EncryptedTextField()
    secret = models.BooleanField(default=True, help_text="Never shown back once saved.")

    class Meta:
        ordering = ["company", "key"]
        constraints = [models.UniqueConstraint(fields=["company", "key"], name="catalog_company_credential_key")]

    def __str__(self):
        return f"{self.company.name}: {self.key}"


class PartnerAccount(TimeStampedModel):
    """A lender user who signs in with the credentials configured in the host."""

    username = models.CharField(max_length=150, unique=True)
    company = models.ForeignKey(
        PartnerCompany, null=True, blank=True, on_delete=models.SET_NULL, related_name="accounts"
    )
    password = models.CharField(max_length=128, blank=True, editable=False)
    active = models.BooleanField(default=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["username"]

    def __str__(self):
        return self.username

    def set_password(self, raw_password: str) -> None:
        self.password = make_password(raw_password)

    def check_password(self, raw_password: str) -> bool:
        def upgrade(raw):
            self.set_password(raw)
            self.save(update_fields=["password"])

        if not self.password:
            return False
        return check_password(raw_password, self.password, setter=upgrade)
