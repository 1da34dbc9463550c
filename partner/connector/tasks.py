"""The connector's Celery task: one event sent under the lease the relay took (`partner.connector.sending`)."""

from celery import shared_task
from django.utils.dateparse import parse_datetime

from partner.connector import sending


@shared_task(name=sending.SEND_TASK)
def event_send(event_id: int, lease_until: str):
    sent = sending.event_send(event_id=event_id, lease_until=parse_datetime(lease_until))
    # Its place among the sends in flight is free and its order's next event is due: hand out what
    # waits now, not at the relay's next round.
    sending.events_relay()
    return sent
