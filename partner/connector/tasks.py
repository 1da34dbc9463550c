"""The connector's Celery task: events sent under the lease the relay took (`partner.connector.sending`)."""

from celery import shared_task
from django.utils.dateparse import parse_datetime

from partner.connector import sending


@shared_task(name=sending.SEND_TASK)
def event_send(event_id: int, lease_until: str):
    # The event handed out, then, while each send delivers, the next one due in this thread; then
    # what waits is relayed at once, not at the relay's next round (`sending.events_send`).
    return sending.events_send(event_id=event_id, lease_until=parse_datetime(lease_until))
