"""Core tasks: the diagnostic ping (`manage.py check_worker`), the daily retention purge, and one
e-mail sent with retries (`partner.core.mail`)."""

import socket

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from partner.core import mail
from partner.core.retention import purge_run

PURGE_TASK = "core.purge"


@shared_task(name="core.worker_ping", ignore_result=False)
def worker_ping(token: str) -> dict:
    return {"token": token, "worker": socket.gethostname(), "at": timezone.now().isoformat()}


# Longer limits than the default task's: a first purge of a large table takes minutes. Cut short, it
# keeps the batches it committed and the next run goes on; run twice at once, each row is done once.
@shared_task(name=PURGE_TASK, soft_time_limit=30 * 60, time_limit=31 * 60)
def purge() -> list[dict]:
    """The retention purge (beat, once a day: CELERY_BEAT_SCHEDULE); what it did, kind by kind."""
    return [outcome.as_dict() for outcome in purge_run()]


@shared_task(bind=True, name=mail.MAIL_TASK, max_retries=settings.CELERY_TASK_MAX_RETRIES)
def mail_send(
    self,
    subject: str,
    body: str,
    to: list[str],
    rate_limited_since: float | None = None,
    outage_since: float | None = None,
):
    """Send one e-mail (`partner.core.mail.mail_send_enqueue`); a mail server's error is retried."""
    return mail.mail_task_run(self, lambda: mail.mail_send(subject=subject, body=body, to=to))
