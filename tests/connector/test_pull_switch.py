"""A connection switched from push to pull while an event waits (issue 36, low): the relay hands
the event to no worker (none could send it), round after round, instead of two empty tasks a
second; the event is in the feed, and goes out if an endpoint comes back."""

import pytest

from partner.connector import sending
from partner.connector.models import Connection, Event, EventState
from partner.connector.selectors import events_after
from partner.connector.services import events_positions_stamp

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_event_waiting_when_push_turns_to_pull_is_handed_to_no_worker(order, connection, tasks_sent):
    [event] = Event.objects.filter(order=order)
    assert event.state == EventState.PENDING
    Connection.objects.filter(pk=connection.pk).update(endpoint_url="")  # switched to pull

    for _ in range(5):
        tasks_sent.clear()
        assert sending.events_relay() == 0
        assert [name for name, _ in tasks_sent if name == sending.SEND_TASK] == []
    events_positions_stamp(connection=connection)
    assert [e.pk for e in events_after(connection=connection)] == [event.pk]  # pulled instead

    Connection.objects.filter(pk=connection.pk).update(endpoint_url="https://orders.partner.example/events")
    tasks_sent.clear()
    assert sending.events_relay() == 1  # an endpoint again: it goes out
