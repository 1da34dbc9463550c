"""State of the service emulator: clients and tokens, the host's lenders and loans,
products, origins, transactions with their responses (and every PATCH of them as it
came), upload slots and events, webhook deliveries (one row per attempt) and fault rules.

Secrets (client secrets, access tokens, partner access tokens, upload
authorizations) are stored as SHA-256 digests, looked up by an indexed column;
user credentials and product signing secrets, which must be handed back, are
stored encrypted.
"""

import json
import uuid

from django.core.exceptions import ValidationError
from django.db import models

from partner.core.encryption import EncryptedTextField
from partner.core.models import TimeStampedModel


def new_id() -> str:
    return str(uuid.uuid4())


class ApiClient(TimeStampedModel):
    """A confidential OAuth client besides the one of SVC_CLIENT_ID, which is always accepted."""

    client_id = models.CharField(max_length=200, unique=True)
    secret_digest = models.CharField(max_length=64, editable=False)
    active = models.BooleanField(default=True)

    def __str__(self):
        return self.client_id


class AccessToken(models.Model):
    digest = models.CharField(max_length=64, unique=True)
    client_id = models.CharField(max_length=200)
    scope = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self):
        return f"token of {self.client_id} until {self.expires_at:%Y-%m-%d %H:%M:%S}"


class Instance(TimeStampedModel):
    """A lender instance of the host application (`urns.instance_urn(instance_id)`)."""

    instance_id = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    address = models.JSONField(default=dict, blank=True)  # name, address, city, state, postalCode

    def __str__(self):
        return self.instance_id


class LenderUser(TimeStampedModel):
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="users")
    username = models.CharField(max_length=150, unique=True)
    name = models.CharField(max_length=200)
    email = models.CharField(max_length=200, blank=True)
    phone = models.CharField(max_length=50, blank=True)
    role = models.CharField(max_length=100, blank=True)
    personas = models.JSONField(default=list, blank=True)
    # JSON of the configured credentials, encrypted; empty when the user configured none.
    credentials_encrypted = EncryptedTextField(blank=True, default="")

    def __str__(self):
        return self.username

    @property
    def credentials(self) -> dict | None:
        return json.loads(self.credentials_encrypted) if self.credentials_encrypted else None

    @credentials.setter
    def credentials(self, value: dict | None):
        self.credentials_encrypted = json.dumps(value) if value else ""

    @property
    def has_credentials(self) -> bool:
        return bool(self.credentials_encrypted)


class Loan(TimeStampedModel):
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="loans")
    guid = models.CharField(max_length=64, unique=True)
    # The loan object as the service shows it: loanNumber, loanAmount, property, borrower, ...
    data = models.JSONField(default=dict)

    def __str__(self):
        return f"{self.data.get('loanNumber') or self.guid}"

    @property
    def borrower(self) -> dict:
        return self.data.get("borrower") or {}

    @property
    def subject_property(self) -> dict:
        return self.data.get("property") or {}


class Product(TimeStampedModel):
    """A product: every spec field in `data`, with id and name indexed beside it."""

    service_id = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=200, unique=True)
    data = models.JSONField(default=dict)
    signing_secret = EncryptedTextField(blank=True, default="")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return self.name


class Origin(models.Model):
    """An origin id and its partner access token: valid together, 300 s from generation."""

    origin_id = models.CharField(max_length=64, unique=True, default=new_id)
    pat_digest = models.CharField(max_length=64, editable=False)
    user = models.ForeignKey(LenderUser, on_delete=models.CASCADE)
    loan = models.ForeignKey(Loan, on_delete=models.CASCADE)
    product = models.ForeignKey(Product, on_delete=models.CASCADE)
    transaction = models.ForeignKey("Transaction", null=True, blank=True, on_delete=models.SET_NULL)
    generated_at = models.DateTimeField(db_index=True)

    def __str__(self):
        return self.origin_id


class Transaction(TimeStampedModel):
    class Status(models.TextChoices):
        CREATED = "created"
        PROCESSING = "processing"
        COMPLETED = "completed"

    id = models.CharField(primary_key=True, max_length=64, default=new_id, editable=False)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="transactions")
    user = models.ForeignKey(LenderUser, on_delete=models.CASCADE)
    loan = models.ForeignKey(Loan, on_delete=models.CASCADE)
    status = models.CharField(max_length=50, default=Status.CREATED)
    # type, options and loan as sent; the credentials are kept apart, encrypted.
    request = models.JSONField(default=dict)
    credentials_encrypted = EncryptedTextField(blank=True, default="")

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self):
        return self.id

    @property
    def request_type(self) -> str:
        return self.request.get("type", "")


class Response(TimeStampedModel):
    """The transaction response: every PATCH merged in."""

    transaction = models.OneToOneField(Transaction, on_delete=models.CASCADE, related_name="response")
    data = models.JSONField(default=dict)
    patch_count = models.PositiveIntegerField(default=0)
    processed_count = models.PositiveIntegerField(default=0)

    def __str__(self):
        return f"response of {self.transaction_id}"


class ResponsePatch(models.Model):
    """One accepted PATCH of a transaction response, as it came: `number` is the response version
    it made (1 for the first), so a person can see each delivery, not only the merged result."""

    transaction = models.ForeignKey(Transaction, on_delete=models.CASCADE, related_name="patches")
    number = models.PositiveIntegerField()
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["transaction_id", "number"]
        constraints = [models.UniqueConstraint(fields=["transaction", "number"], name="sandbox_patch_number_unique")]

    def __str__(self):
        return f"PATCH {self.number} of {self.transaction_id}"


class UploadSlot(TimeStampedModel):
    id = models.CharField(primary_key=True, max_length=64, default=new_id, editable=False)
    transaction = models.ForeignKey(Transaction, on_delete=models.CASCADE, related_name="slots")
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=255)
    authorization_digest = models.CharField(max_length=64, editable=False)
    uploaded_at = models.DateTimeField(null=True, blank=True)
    content = models.BinaryField(null=True, blank=True)
    size = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self):
        return f"{self.name} ({self.id})"


class Event(TimeStampedModel):
    id = models.CharField(primary_key=True, max_length=64, default=new_id, editable=False)
    transaction = models.ForeignKey(Transaction, on_delete=models.CASCADE, related_name="events")
    type = models.CharField(max_length=200)
    data = models.JSONField(default=dict, blank=True)

    def __str__(self):
        return f"{self.type} ({self.id})"


class WebhookDelivery(TimeStampedModel):
    """One notification: the exact bytes, where it goes, and how it went."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"
        DROPPED = "dropped"

    event_id = models.CharField(max_length=64, unique=True, default=new_id)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="deliveries")
    url = models.CharField(max_length=500)
    resource_type = models.CharField(max_length=200)
    resource_id = models.CharField(max_length=64, db_index=True)
    body = models.BinaryField()
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempt_count = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"

    def __str__(self):
        return f"{self.resource_type} {self.resource_id} -> {self.status}"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["delivery_id", "number"]

    def __str__(self):
        return f"attempt {self.number}: {self.status_code or self.error}"


class FaultRule(TimeStampedModel):
    """Answer an endpoint with an error at a rate, add latency, or drop webhooks."""

    class Endpoint(models.TextChoices):
        ANY = "*", "every endpoint"
        TOKEN = "token"  # noqa: S105 - an endpoint name
        ORIGIN = "origin", "#1 origin"
        TRANSACTION = "transaction", "#2 transaction"
        RESPONSE = "response", "#3 response PATCH"
        RESOURCES = "resources", "#4 slot request"
        UPLOAD = "upload", "#5 upload"
        EVENT = "event", "#6 event"
        TRANSACTIONS = "transactions", "#7 transaction list"
        PRODUCTS = "products", "#8 product list"
        PRODUCT = "product", "#9/#10 product PUT/PATCH"
        WEBHOOK = "webhook", "webhook deliveries"

    endpoint = models.CharField(max_length=20, choices=Endpoint.choices, default=Endpoint.ANY)
    status = models.PositiveIntegerField(null=True, blank=True, help_text="429 or 5xx; empty for none")
    rate = models.FloatField(default=1.0, help_text="share of the calls hit, 0 to 1")
    latency = models.FloatField(default=0.0, help_text="seconds added to each call hit")
    drop_webhooks = models.BooleanField(default=False, help_text="with endpoint 'webhook': do not send")
    remaining = models.PositiveIntegerField(null=True, blank=True, help_text="only the next N calls hit")
    retry_after = models.PositiveIntegerField(default=1, help_text="Retry-After seconds of a 429/503")
    active = models.BooleanField(default=True)

    def clean(self):
        if self.status is not None and not (self.status == 429 or 500 <= self.status <= 599):
            raise ValidationError({"status": "a fault answers 429 or a 5xx status"})
        if not 0.0 <= self.rate <= 1.0:
            raise ValidationError({"rate": "between 0 and 1"})
        if self.drop_webhooks and self.endpoint not in (self.Endpoint.WEBHOOK, self.Endpoint.ANY):
            raise ValidationError({"drop_webhooks": "applies to the 'webhook' endpoint"})

    def __str__(self):
        parts = [self.endpoint]
        if self.status:
            parts.append(f"status {self.status}")
        if self.latency:
            parts.append(f"+{self.latency}s")
        if self.drop_webhooks:
            parts.append("drop")
        if self.remaining is not None:
            parts.append(f"next {self.remaining}")
        return " ".join(parts)
