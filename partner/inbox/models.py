"""The webhook inbox: every notification the service sent us, stored before we answered.

A row is untrusted data kept as received (raw body, headers without secrets),
plus what we did with it. `dedupe_key` is unique, so a repeated delivery, even
two copies arriving at the same moment, is stored and processed once. A worker holds the row
with a lease (`claimed_until`) while it processes it.
"""

from django.db import models
from django.db.models import Q

from partner.core.leases import LeasedModel
from partner.core.models import TimeStampedModel


class NotificationState(models.TextChoices):
    RECEIVED = "received", "Received"  # stored; processing not yet enqueued (or the broker was down)
    QUEUED = "queued", "Queued"  # handed to the broker
    PROCESSING = "processing", "Processing"  # a worker holds it (claimed_until)
    PROCESSED = "processed", "Processed"
    IGNORED = "ignored", "Ignored"  # a resource or event type we do not handle
    FAILED = "failed", "Failed"  # gave up; see last_error
    REFUSED = "refused", "Refused"  # signed with another product's secret: answered 401, never processed


# Notifications not yet done with: the backlog.
UNFINISHED = Q(state__in=[NotificationState.RECEIVED, NotificationState.QUEUED, NotificationState.PROCESSING])


class Notification(TimeStampedModel, LeasedModel):
    dedupe_key = models.CharField(max_length=128, unique=True)
    event_id = models.CharField(max_length=200, blank=True)
    resource_type = models.CharField(max_length=200, db_index=True)
    resource_id = models.CharField(max_length=200, db_index=True)
    event_type = models.CharField(max_length=100)
    event_time = models.DateTimeField(null=True, blank=True)
    product_name = models.CharField(
        max_length=200, blank=True, help_text="The product's name, which the service sends as meta.instanceId."
    )
    resource_ref = models.URLField(max_length=2000, blank=True)

    body = models.TextField(help_text="The raw body exactly as received.")
    headers = models.JSONField(default=dict, help_text="Request headers, without secrets.")
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    state = models.CharField(max_length=20, choices=NotificationState, default=NotificationState.RECEIVED)
    attempts = models.PositiveIntegerField(default=0)
    duplicates = models.PositiveIntegerField(default=0, help_text="Repeated deliveries answered 202 and not processed.")
    last_error = models.TextField(blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at"]
        indexes = [
            models.Index(fields=["state", "updated_at"], name="inbox_state_updated"),
            # The hand-back of dead workers' notifications, every few seconds in every worker: held ones only.
            models.Index(fields=["claimed_until"], condition=Q(claimed_until__isnull=False), name="inbox_held"),
            # The relay's round, the sweep and the backlog's age (/metrics, /healthz/ready): the size of
            # the backlog, never a walk of the history, whatever statistics the planner last took.
            models.Index(fields=["id"], condition=UNFINISHED, name="inbox_unfinished"),
            models.Index(fields=["received_at"], condition=UNFINISHED, name="inbox_unfinished_age"),
            # The daily purge of bodies, headers and addresses: the rows still holding them.
            models.Index(
                fields=["id"],
                condition=~Q(body="") | ~Q(headers={}) | Q(remote_addr__isnull=False),
                name="inbox_personal_data",
            ),
        ]

    def __str__(self):
        return f"{self.event_type} {self.resource_type} {self.resource_id}"
