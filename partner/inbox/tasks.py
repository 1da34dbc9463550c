"""Celery tasks of the inbox: process one notification; sweep the ones left behind."""

from celery import shared_task
from django.conf import settings

from partner.core.retries import retry_countdown
from partner.inbox import services
from partner.platform.errors import ServiceError


@shared_task(bind=True, name="inbox.process", max_retries=settings.CELERY_TASK_MAX_RETRIES)
def process_notification(self, notification_id: int):
    try:
        return services.notification_process(notification_id=notification_id)
    except ServiceError as exc:  # transient: the service asked us to come back later
        raise self.retry(
            exc=exc, countdown=retry_countdown(self.request.retries, retry_after=getattr(exc, "retry_after", None))
        )


@shared_task(name="inbox.sweep")
def sweep():
    return services.notifications_sweep()
