"""Orders: one per transaction, recording each completed step of its fulfillment.

The spec's states are VALIDATION_REQUESTED (transaction webhook) and
REQUEST_COMPLETED (processed callback); ours in between say how far the work
got, so a retried or restarted task resumes after the last completed step and
never uploads or patches twice.

An automated order is answered by one PATCH. A staff-worked order is acknowledged by the pipeline
(`WITH_STAFF`), then worked by people: each of their status updates, deliveries and declines is a
`Delivery`, stored first and sent by a worker; its documents are `OrderDocument` rows whose
bytes are files in Django's storage.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from partner.core.encryption import EncryptedTextField
from partner.core.leases import LeasedModel
from partner.core.models import OutboundTry, TimeStampedModel
from partner.platform.types import UploadSlot


class OrderStatus(models.TextChoices):
    VALIDATION_REQUESTED = "VALIDATION_REQUESTED", "Validation requested"  # webhook received
    IN_PROGRESS = "IN_PROGRESS", "In progress"  # transaction read, work under way
    WITH_STAFF = "WITH_STAFF", "With staff"  # a staff-worked order, acknowledged: people are working it
    RESPONSE_DELIVERED = "RESPONSE_DELIVERED", "Response delivered"  # PATCHed; waiting for the callback
    REQUEST_COMPLETED = "REQUEST_COMPLETED", "Request completed"  # the service processed our response
    FAILED = "FAILED", "Failed"  # permanent failure; see failure_reason
    DECLINED = "DECLINED", "Declined"  # a staff-worked order staff declined, with a reason the lender read


# Worked by the automated pipeline (and its sweeps): an order with staff is not.
ACTIVE_STATUSES = (OrderStatus.VALIDATION_REQUESTED, OrderStatus.IN_PROGRESS)
_STATUS_PHRASES = {
    OrderStatus.VALIDATION_REQUESTED: "not acknowledged yet",
    OrderStatus.IN_PROGRESS: "being acknowledged",
    OrderStatus.WITH_STAFF: "with staff",
    OrderStatus.RESPONSE_DELIVERED: "delivered and awaits the service's confirmation",
    OrderStatus.REQUEST_COMPLETED: "completed",
    OrderStatus.FAILED: "failed",
    OrderStatus.DECLINED: "declined",
}
# Nothing more happens to these.
FINAL_STATUSES = (OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED, OrderStatus.DECLINED)


class FailureCode(models.TextChoices):
    CREDENTIALS_INVALID = "credentials_invalid", "Credentials invalid"
    ORDER_REFUSED = "order_refused", "Order refused by the fulfiller"
    SETUP_INCOMPLETE = "setup_incomplete", "The product's setup is incomplete"  # ours to fix, not the lender's
    PRODUCT_UNKNOWN = "product_unknown", "Product unknown"
    SERVICE_REJECTED = "service_rejected", "The service rejected a call"
    RETRIES_EXHAUSTED = "retries_exhausted", "Gave up after retries"
    RESOURCE_OUTSIDE_SERVICE = "resource_outside_service", "Resource outside the service"


class Order(TimeStampedModel, LeasedModel):
    transaction_id = models.CharField(max_length=200, unique=True)
    resource_ref = models.URLField(max_length=2000, blank=True)
    product_name = models.CharField(max_length=200, blank=True, db_index=True)
    ordered_by = models.ForeignKey(
        "catalog.PartnerAccount",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The partner account the initiating user's credentials matched: who may see the order.",
    )
    request_type = models.CharField(max_length=50, blank=True)
    status = models.CharField(
        max_length=30, choices=OrderStatus, default=OrderStatus.VALIDATION_REQUESTED, db_index=True
    )
    resource_id = models.CharField(max_length=200, blank=True, help_text="Id of the first delivered attachment.")
    reference_number = models.CharField(max_length=100, blank=True)
    response = models.JSONField(null=True, blank=True, help_text="The response we deliver (without resources).")
    findings = models.JSONField(
        default=list, blank=True, help_text="What the work found, field by field, in the lender's words."
    )

    # Each completed step, so that a retry resumes after the last one.
    prepared_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    event_id = models.CharField(max_length=200, blank=True, help_text="The processed callback event.")

    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    failure_code = models.CharField(max_length=40, choices=FailureCode, blank=True)
    failure_reason = models.TextField(blank=True)
    # A worker holds the order until claimed_until (LeasedModel); a retry is due at next_attempt_at.
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    # The order as the lender sent it (`request` of the transaction: loan data, options, notes),
    # for the staff who work it; borrowers' data, erased with the order's data (retention).
    request = models.JSONField(null=True, blank=True, help_text="The transaction request as the lender sent it.")
    loan_number = models.CharField(max_length=100, blank=True, db_index=True)
    # Staff-worked orders: who works it, and by when.
    staff_worked = models.BooleanField(default=False, help_text="Worked by staff after an acknowledgement.")
    assigned_to = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    assigned_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True, help_text="The product's turnaround target from the order.")
    # When staff were e-mailed of the order (new; past due): set only once the mail server took it.
    staff_notified_at = models.DateTimeField(null=True, blank=True)
    overdue_notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "updated_at"], name="order_status_updated"),
            # The hand-back of dead workers' orders, every few seconds in every worker: held ones only.
            models.Index(fields=["claimed_until"], condition=Q(claimed_until__isnull=False), name="order_held"),
            # Open orders (/metrics, retention's "never an open order"): the size of the work in hand.
            models.Index(
                fields=["status", "product_name"],
                condition=~Q(status__in=FINAL_STATUSES),
                name="order_open",
            ),
            # Orders finished before a cut-off (retention).
            models.Index(fields=["status", "completed_at"], name="order_status_completed"),
            models.Index(fields=["status", "failed_at"], name="order_status_failed"),
        ]

    def __str__(self):
        # What staff read in the admin's titles and breadcrumbs: our reference once it has one, the
        # state in words (never its stored name).
        return f"Order {self.reference_number or self.transaction_id} ({self.get_status_display().lower()})"

    @property
    def status_phrase(self) -> str:
        """Where the order stands, to finish "The order is …" for staff."""
        return _STATUS_PHRASES.get(self.status, self.get_status_display().lower())


def _document_path(attachment, filename: str) -> str:
    """Where a document's file is stored: by order, never by a name the uploader chose alone."""
    return f"documents/{attachment.order.transaction_id}/{attachment.position}-{filename}"


class OrderDocument(models.Model):
    """A document we deliver: its file (Django's storage), its slot, whether it is uploaded.

    An automated order's documents are delivered with its one PATCH. A staff-worked order's are
    attached by staff, waiting (`delivery` empty) until a delivery takes them.
    """

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="attachments")
    delivery = models.ForeignKey(
        "Delivery", null=True, blank=True, on_delete=models.PROTECT, related_name="attachments"
    )
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=100)
    file = models.FileField(upload_to=_document_path, max_length=500, blank=True)
    size = models.PositiveIntegerField(default=0)
    added_by = models.CharField(max_length=150, blank=True, help_text="The staff member who attached it.")
    added_at = models.DateTimeField(null=True, blank=True)
    resource_id = models.CharField(max_length=200, blank=True)
    upload_location = models.URLField(max_length=2000, blank=True)
    # One-time upload authorization from the slot request: a credential, kept encrypted.
    upload_authorization = EncryptedTextField(blank=True)
    # Set before each PUT: a run that finds it set and no uploaded_at knows the outcome is unknown.
    upload_started_at = models.DateTimeField(null=True, blank=True)
    uploaded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["order", "position"]
        constraints = [models.UniqueConstraint(fields=["order", "position"], name="attachment_position_unique")]
        indexes = [
            # The purge of documents: the rows still holding a file or an upload location.
            models.Index(
                fields=["id", "order"],
                condition=~Q(file="") | ~Q(upload_location="") | ~Q(upload_authorization=""),
                name="attachment_document_held",
            ),
        ]

    def __str__(self):
        return self.name

    def read(self) -> bytes:
        """The document's bytes (b"" once purged)."""
        if not self.file:
            return b""
        with self.file.open("rb") as handle:
            return handle.read()

    def upload_slot(self) -> UploadSlot:
        """The slot the service gave this attachment (after the slot request)."""
        return UploadSlot(
            id=self.resource_id,
            name=self.name,
            mime_type=self.mime_type,
            location=self.upload_location,
            authorization=self.upload_authorization,
        )


class OrderStep(models.Model):
    """What happened to an order, one row per step or failure, for people reading the admin."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(max_length=50)
    detail = models.TextField(blank=True)
    actor = models.CharField(max_length=150, blank=True, help_text="The staff member who did it (empty: a worker).")
    # When it happened: a run's steps are written together at its end (`services.steps_batched`).
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["order", "created_at", "id"]
        # The purge of order data: the steps still holding a detail.
        indexes = [models.Index(fields=["id", "order"], condition=~Q(detail=""), name="step_detail_held")]

    def __str__(self):
        return self.name


class DeliveryKind(models.TextChoices):
    RESULT = "result", "Result"  # an automated order's response: the fulfiller's work, its documents
    ACKNOWLEDGEMENT = "acknowledgement", "Acknowledgement"  # the pipeline's first PATCH of a staff-worked order
    STATUS_UPDATE = "status_update", "Status update"  # partnerStatus only
    PARTIAL = "partial", "Partial delivery"  # status processing, with data and documents
    FINAL = "final", "Final delivery"  # status completed: the order is done once the service confirms it
    DECLINE = "decline", "Decline"  # status completed with the reason; the order is declined
    FAILURE_NOTICE = "failure_notice", "Failure notice"  # partnerStatus only: why the order failed


# The deliveries after which nothing more is sent: the order is done (or declined) once they are.
ENDING_KINDS = (DeliveryKind.RESULT, DeliveryKind.FINAL, DeliveryKind.DECLINE)
# Made by the pipeline, not by staff: when one fails for good, the order fails with it.
PIPELINE_KINDS = (DeliveryKind.RESULT, DeliveryKind.ACKNOWLEDGEMENT)


class DeliveryState(models.TextChoices):
    PENDING = "pending", "Waiting to be sent"
    SENT = "sent", "Sent"  # the service accepted the PATCH
    CONFIRMED = "confirmed", "Confirmed"  # its "processed" callback came
    FAILED = "failed", "Failed"  # refused for good; see failure_reason


class Delivery(TimeStampedModel):
    """One PATCH we owe the service: stored first, sent by a worker (`partner.fulfillment.sending.sender`).

    Every response is one: an automated order's result, a staff-worked order's acknowledgement, the
    staff's status updates, partial and final deliveries and declines, and the notice of a failure
    the lender can act on. Sent in creation order, each step recorded (slots requested, each
    document uploaded, the PATCH), so a worker that dies resumes where it stopped and nothing is
    sent twice. `sequence` is the
    number of our PATCHes of the transaction up to this one (the response version it makes), written
    before the PATCH: a "processed" callback that names the response version confirms that delivery,
    one that does not confirms the oldest the service accepted and has not confirmed.
    `unanswered_since` is written with it and cleared by the PATCH's answer: a PATCH whose answer
    was never recorded (the connection lost, the worker killed, our database away at its record)
    may have been accepted, and is sent again only once its callback had time to come
    (CALLBACK_WAIT_SECONDS).
    """

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="deliveries")
    kind = models.CharField(max_length=20, choices=DeliveryKind)
    state = models.CharField(max_length=20, choices=DeliveryState, default=DeliveryState.PENDING, db_index=True)
    partner_status = models.CharField(max_length=500, blank=True, help_text="partnerStatus: what the lender reads.")
    loan = models.JSONField(default=dict, blank=True, help_text="Loan fields delivered (response data entitlement).")
    result = models.JSONField(null=True, blank=True, help_text="The action result, for an action product.")
    created_by = models.CharField(max_length=150, blank=True, help_text="The staff member who made it.")

    sequence = models.PositiveIntegerField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    confirmed_by = models.CharField(max_length=200, blank=True, help_text="The processed callback event.")
    failed_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    unanswered_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="A PATCH of it left then and no answer of the service's was recorded: the service may have it.",
    )

    class Meta:
        ordering = ["order", "created_at", "id"]
        verbose_name_plural = "deliveries"

    def __str__(self):
        return f"{self.get_kind_display()} of {self.order.transaction_id}"

    @property
    def final(self) -> bool:
        """Nothing is sent after it."""
        return self.kind in ENDING_KINDS


class ServiceCall(models.TextChoices):
    """The calls made to send a delivery, in staff's words."""

    SLOTS = "resources", "Upload slots requested"
    UPLOAD = "upload", "Document uploaded"
    RESPONSE = "response", "Response sent (PATCH)"
    OTHER = "other", "Other call to the service"


class DeliveryAttempt(OutboundTry):
    """One call tried to send a delivery (a slot request, an upload, the PATCH), as an event's
    `EventAttempt`: what the service answered (or why it did not), and how long it took."""

    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="service_tries")
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="tries")
    call = models.CharField(max_length=20, choices=ServiceCall, default=ServiceCall.OTHER)

    class Meta:
        ordering = ["order", "started_at", "id"]

    def __str__(self):
        return f"{self.get_call_display()} at {self.started_at:%Y-%m-%d %H:%M:%S}"


class ReconciliationState(models.Model):
    """Where the reconciliation left the service's transaction list: one row
    (`partner.fulfillment.recovery.reconciliation`).

    The cheap pass reads the list from `position` (less the marker) and checks the marker there; the
    full pass reads every page when `full_pass_at` is a RECONCILE_FULL_INTERVAL old.
    """

    name = models.CharField(max_length=50, unique=True)
    position = models.PositiveIntegerField(default=0, help_text="Items of the list read: the next pass starts here.")
    marker = models.JSONField(default=list, blank=True, help_text="Ids of the items just before `position`.")
    watched = models.JSONField(
        default=dict, blank=True, help_text="Where each unfinished transaction was seen: id -> position."
    )
    full_pass_at = models.DateTimeField(null=True, blank=True, help_text="When the last full pass began.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.name} at {self.position}"


class StaffOrder(Order):
    """A staff-worked order as its staff see it: the work queue and the order's page in the admin
    (`partner.fulfillment.staff.admin`). A proxy: the same rows as the orders, another page."""

    class Meta:
        proxy = True
        verbose_name = "order to work"
        verbose_name_plural = "orders to work"
