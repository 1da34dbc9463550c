"""A connection to a partner's own order system, the events we owe it, their attempts, and the
answers it posted (by idempotency key).

A `Connection` names the system: where its events go (`endpoint_url`; empty: it pulls the events
feed instead), the secrets they are signed with (several during a rotation), which event types it
wants, the products whose orders it works, and its OAuth client (`application`) for the API. Its
`user` is who the system acts as: a connected order is assigned to it, so every answer goes
through the staff's rules and a staff member takes the order over as they would from a colleague.
An `OrderRoute` records, for good, the connection each order was routed to when it arrived: what a
connection can reach is its routed orders, whatever its products are now.

An `Event` is stored in the transaction that caused it and sent by a worker after commit, at least
once, in order per order (`partner.connector.sending`); each try is an `EventAttempt`.
"""

import secrets as token_source

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from partner.core.encryption import EncryptedTextField
from partner.core.leases import LeasedModel
from partner.core.models import OutboundTry, TimeStampedModel
from partner.fulfillment.models import Order

SECRET_PREFIX = "whsec_"  # noqa: S105 - the form of a secret, not one

# Every event type a connection may ask for (`noun.verb`, as the Standard Webhooks convention names them).
EVENT_TYPES = {
    "order.created": "A connected order arrived and was acknowledged: the order as the lender sent it.",
    "order.delivery.confirmed": "The service processed one of the order's deliveries.",
    "order.delivery.failed": "The service refused one of the order's deliveries for good.",
    "order.completed": "The service processed the final delivery: the order is done.",
    "order.declined": "The decline reached the service: the order is done.",
    "order.failed": "The order failed for good.",
    "order.taken_over": "A staff member took the order over: the system's answers are refused from now on.",
    "order.handed_back": "Staff handed a taken-over order back: the system works and answers it again.",
}


def secret_new() -> str:
    """A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64."""
    import base64

    return SECRET_PREFIX + base64.b64encode(token_source.token_bytes(32)).decode()


class Connection(TimeStampedModel):
    name = models.SlugField(max_length=100, unique=True, help_text="Short name of the partner's system.")
    endpoint_url = models.URLField(
        "endpoint URL", max_length=2000, blank=True, help_text="Where events are POSTed. Empty: the system pulls them."
    )
    signing_secrets = EncryptedTextField(
        blank=True,
        help_text="whsec_… secrets, one a line (encrypted). Every one signs each event: add the new one, "
        "let the system switch, then remove the old one.",
    )
    event_types = models.JSONField(
        default=list, blank=True, help_text="The event types the system wants (empty: every type)."
    )
    enabled = models.BooleanField(default=True, help_text="Events are sent while enabled; they wait otherwise.")
    products = models.ManyToManyField(
        "catalog.Product",
        blank=True,
        related_name="+",
        help_text="The connected products whose orders it works (one connection per product).",
    )
    # One connection per product: a unique index on the table's product (migration 0004,
    # `connection_product_once`), so no order is claimed by two systems; `product_move` hands one over.
    notify_email = models.EmailField(blank=True, help_text="Who is told when its endpoint keeps failing.")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="connection",
        help_text="Who the system acts as: its connected orders are assigned to it.",
    )
    application = models.OneToOneField(
        settings.OAUTH2_PROVIDER_APPLICATION_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="connection",
        help_text="Its OAuth 2.0 client (client credentials) for the API.",
    )

    # Health: what the last attempts said.
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True, help_text="First failure since the last success.")
    consecutive_failures = models.PositiveIntegerField(default=0)
    disabled_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]
        permissions = [("rotate_connection_secrets", "Can add and drop a connection's signing secrets")]

    def __str__(self):
        return self.name

    def secrets(self) -> list[str]:
        return [line.strip() for line in (self.signing_secrets or "").split() if line.strip()]

    def wants(self, event_type: str) -> bool:
        return not self.event_types or event_type in self.event_types


class EventState(models.TextChoices):
    PENDING = "pending", "Waiting to be sent"
    DELIVERED = "delivered", "Delivered"  # the endpoint answered 2xx
    FAILED = "failed", "Failed"  # given up: failing for CONNECTOR_RETRY_PATIENCE; replay sends it again
    PULL = "pull", "Kept for the feed"  # a connection without an endpoint: pulled, never pushed


class Event(TimeStampedModel, LeasedModel):
    """One event for one connection: its Standard Webhooks message, stored before it is sent."""

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="events")
    order = models.ForeignKey("fulfillment.Order", on_delete=models.CASCADE, related_name="+")
    message_id = models.CharField(max_length=64, unique=True, help_text="webhook-id: the receiver's dedupe key.")
    type = models.CharField(max_length=50)
    payload = models.JSONField(help_text='{"type", "timestamp", "data"}: the body sent.')
    state = models.CharField(max_length=20, choices=EventState, default=EventState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="First failed try since it was made or replayed; given up CONNECTOR_RETRY_PATIENCE after.",
    )
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # Where it stands in the events feed: stamped once it is committed, in the order events became
    # visible, by one writer at a time (`selectors.events_positions_stamp`), so that a cursor never
    # passes an event committed later with a smaller id. Empty until the feed first looks.
    position = models.PositiveBigIntegerField(null=True, blank=True, unique=True, editable=False)

    class Meta:
        ordering = ["id"]
        indexes = [
            # The relay's round: the pending events, oldest first.
            models.Index(fields=["connection", "order", "id"], condition=Q(state="pending"), name="event_pending"),
            models.Index(fields=["claimed_until"], condition=Q(claimed_until__isnull=False), name="event_held"),
            # The feed: a connection's events by position, and those not yet stamped.
            models.Index(fields=["connection", "position"], name="event_feed_position"),
            models.Index(fields=["connection", "id"], condition=Q(position__isnull=True), name="event_unstamped"),
        ]

    def __str__(self):
        return f"{self.type} {self.message_id}"


class EventAttempt(OutboundTry):
    """One try to send an event: what the endpoint answered (or why it did not), and how long it took."""

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="tries")

    class Meta:
        ordering = ["event", "started_at", "id"]

    def __str__(self):
        return f"{self.event} at {self.started_at:%Y-%m-%d %H:%M:%S}"


class IdempotentAnswer(models.Model):
    """A POST of the API accepted under an Idempotency-Key: its fingerprint and what replays the
    answer, its status and `body`, the ids of what it made (`{"order", "delivery"}`, `{"document"}`),
    a few dozen bytes whatever the order holds; purged past CONNECTOR_IDEMPOTENCY_HOURS."""

    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the method, path and body.")
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["connection", "key"], name="idempotent_answer_key")]

    def __str__(self):
        return self.key


class OrderRoute(models.Model):
    """The connection an order was routed to when it reached its workers (its acknowledgement), as
    the product was connected then: the order's connection for good. The API's reads and answers,
    its events and the admin's take-over follow this record, never the product's current settings,
    so a product switched back to staff work or handed to another connection takes none of the
    orders a system was given, and gives it none of the orders it was not. Only a product's move
    (`services.product_move`) hands a record on, for the open orders the old system still works.

    A row of its own beside the order, not a column of it: the fulfillment is a layer below the
    connector and names no connection."""

    order = models.OneToOneField(
        "fulfillment.Order", primary_key=True, on_delete=models.CASCADE, related_name="connector_route"
    )
    connection = models.ForeignKey(Connection, on_delete=models.CASCADE, related_name="routes")
    routed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["connection", "order"], name="order_route_connection")]
        default_permissions = ()  # no page of its own: read and changed through the connector's services

    def __str__(self):
        return f"order {self.order_id} → {self.connection_id}"


class ConnectedOrder(Order):
    """A connected order as staff see it in the connector's admin: its events and their attempts, and
    the take-over by hand. A proxy: the same rows as the orders, another page."""

    class Meta:
        proxy = True
        permissions = [("take_over_connectedorder", "Can take a connected order over by hand")]
        verbose_name = "connected order"
        verbose_name_plural = "connected orders"
