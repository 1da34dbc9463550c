"""The connector's events and idempotent answers are purged with the order data: an event of a
finished order once sent, never one waiting or of an open order; an answer after its key's window."""

from datetime import timedelta

import pytest
from django.utils import timezone

from partner.connector.models import Event, EventState, IdempotentAnswer
from partner.connector.retention import answers_purge, events_purge
from partner.fulfillment.models import Order, OrderStatus

pytestmark = pytest.mark.django_db


def test_old_events_of_finished_orders_and_old_answers_go(order, connection):
    old = timezone.now() - timedelta(days=200)
    event = Event.objects.get(order=order)
    Event.objects.filter(pk=event.pk).update(created_at=old, state=EventState.DELIVERED)
    cutoff = timezone.now() - timedelta(days=90)
    assert sum(events_purge(cutoff, 100)) == 0  # its order is open
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.REQUEST_COMPLETED)
    Event.objects.filter(pk=event.pk).update(state=EventState.PENDING)
    assert sum(events_purge(cutoff, 100)) == 0  # still to be sent
    Event.objects.filter(pk=event.pk).update(state=EventState.DELIVERED)
    assert sum(events_purge(cutoff, 100)) == 1 and not Event.objects.exists()

    fresh = IdempotentAnswer.objects.create(connection=connection, key="a", fingerprint="f", status_code=201, body={})
    stale = IdempotentAnswer.objects.create(connection=connection, key="b", fingerprint="f", status_code=201, body={})
    IdempotentAnswer.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(days=3))
    assert sum(answers_purge(cutoff, 100)) == 1
    assert list(IdempotentAnswer.objects.values_list("pk", flat=True)) == [fresh.pk]
