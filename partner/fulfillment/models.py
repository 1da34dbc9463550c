"""Trackers: one per transaction, recording each completed step of its fulfillment.

The spec's states are VALIDATION_REQUESTED (transaction webhook) and
REQUEST_COMPLETED (processed callback); ours in between say how far the work
got, so a retried or restarted task resumes after the last completed step and
never uploads or patches twice.
"""

from django.db import models
from django.db.models import Q

from partner.core.encryption import EncryptedTextField
from partner.core.leases import LeasedModel
from partner.core.models import TimeStampedModel
from partner.platform.types import UploadSlot


class TrackerStatus(models.TextChoices):
    VALIDATION_REQUESTED = "VALIDATION_REQUESTED", "Validation requested"  # webhook received
    IN_PROGRESS = "IN_PROGRESS", "In progress"  # transaction read, work under way
    RESPONSE_DELIVERED = "RESPONSE_DELIVERED", "Response delivered"  # PATCHed; waiting for the callback
    REQUEST_COMPLETED = "REQUEST_COMPLETED", "Request completed"  # the service processed our response
    FAILED = "FAILED", "Failed"  # permanent failure; see failure_reason


ACTIVE_STATUSES = (TrackerStatus.VALIDATION_REQUESTED, TrackerStatus.IN_PROGRESS)


class FailureCode(models.TextChoices):
    CREDENTIALS_INVALID = "credentials_invalid", "Credentials invalid"
    ORDER_REFUSED = "order_refused", "Order refused by the fulfiller"
    PRODUCT_UNKNOWN = "product_unknown", "Product unknown"
    SERVICE_REJECTED = "service_rejected", "The service rejected a call"
    RETRIES_EXHAUSTED = "retries_exhausted", "Gave up after retries"
    RESOURCE_OUTSIDE_SERVICE = "resource_outside_service", "Resource outside the service"


class Tracker(TimeStampedModel, LeasedModel):
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
        max_length=30, choices=TrackerStatus, default=TrackerStatus.VALIDATION_REQUESTED, db_index=True
    )
    resource_id = models.CharField(max_length=200, blank=True, help_text="Id of the first delivered attachment.")
    reference_number = models.CharField(max_length=100, blank=True)
    response = models.JSONField(null=True, blank=True, help_text="The response we deliver (without resources).")

    # Each completed step, so that a retry resumes after the last one.
    prepared_at = models.DateTimeField(null=True, blank=True)
    slots_requested_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)
    event_id = models.CharField(max_length=200, blank=True, help_text="The processed callback event.")

    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    failure_code = models.CharField(max_length=40, choices=FailureCode, blank=True)
    failure_reason = models.TextField(blank=True)
    # A worker holds the tracker until claimed_until (LeasedModel); a retry is due at next_attempt_at.
    next_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "updated_at"], name="tracker_status_updated"),
            # The hand-back of dead workers' trackers, every few seconds in every worker: held ones only.
            models.Index(fields=["claimed_until"], condition=Q(claimed_until__isnull=False), name="tracker_held"),
        ]

    def __str__(self):
        return f"{self.transaction_id} ({self.status})"


class TrackerAttachment(models.Model):
    """A file we deliver with the response: its bytes, its slot, whether it is uploaded."""

    tracker = models.ForeignKey(Tracker, on_delete=models.CASCADE, related_name="attachments")
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=255)
    mime_type = models.CharField(max_length=100)
    content = models.BinaryField()
    resource_id = models.CharField(max_length=200, blank=True)
    upload_location = models.URLField(max_length=2000, blank=True)
    # One-time upload authorization from the slot request: a credential, kept encrypted.
    upload_authorization = EncryptedTextField(blank=True)
    # Set before each PUT: a run that finds it set and no uploaded_at knows the outcome is unknown.
    upload_started_at = models.DateTimeField(null=True, blank=True)
    uploaded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["tracker", "position"]
        constraints = [models.UniqueConstraint(fields=["tracker", "position"], name="attachment_position_unique")]

    def __str__(self):
        return self.name

    def upload_slot(self) -> UploadSlot:
        """The slot the service gave this attachment (after the slot request)."""
        return UploadSlot(
            id=self.resource_id,
            name=self.name,
            mime_type=self.mime_type,
            location=self.upload_location,
            authorization=self.upload_authorization,
        )


class TrackerStep(models.Model):
    """What happened to a tracker, one row per step or failure, for people reading the admin."""

    tracker = models.ForeignKey(Tracker, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(max_length=50)
    detail = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["tracker", "created_at", "id"]

    def __str__(self):
        return self.name


class ReconciliationState(models.Model):
    """Where the reconciliation left the service's transaction list: one row (`partner.fulfillment.reconciliation`).

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
