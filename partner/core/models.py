"""Abstract base models: the time-stamped row, and one try of a call to another system."""

from django.db import models


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class OutboundTry(models.Model):
    """One try of a call to another system, as a row (`partner.core.outbound.Try`): when, how long,
    what came back (its status and the start of the answer) or, with no status, why nothing did.
    Each channel keeps its own (the connector's events, the deliveries to the service)."""

    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True, help_text="Empty: no answer.")
    answer = models.TextField(blank=True, help_text="The start of the answer (or the error), truncated.")
    succeeded = models.BooleanField(default=False)

    class Meta:
        abstract = True

    @property
    def outcome(self) -> str:
        """What came of the try, in staff's words."""
        status = self.status_code
        if self.succeeded:
            return "Accepted"
        if status is None:
            return f"No answer: {self.answer}" if self.answer else "No answer"
        if status == 429:
            return f"Asked us to wait (status {status})"
        if status >= 500:
            return f"Failed on their side (status {status})"
        if 300 <= status < 400:
            return f"Redirected (status {status}), not followed"
        return f"Refused (status {status})"

    @classmethod
    def from_try(cls, attempt, **fields):
        """An unsaved row of the outbound module's `attempt`."""
        return cls(
            started_at=attempt.started_at,
            duration_ms=attempt.duration_ms,
            status_code=attempt.status,
            answer=attempt.answer,
            succeeded=attempt.succeeded,
            **fields,
        )
