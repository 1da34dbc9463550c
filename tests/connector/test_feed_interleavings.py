"""The events feed never skips an event, whatever order the transactions that make them commit in.

A deterministic interleaving on real PostgreSQL, two connections: one worker stores an event of one
order and holds its transaction open (the event has the smaller id, not yet visible); another
stores an event of another order and commits; a system pages `GET /api/v1/events?after=` and gets
the second; then the first commits. The system's next page must bring it: every event exactly
once (paging by id, its cursor had passed it for good).
"""

import threading

import pytest
from django.db import transaction

from partner.connector.events import event_store
from partner.connector.models import Event
from tests.helpers.connector import ApiClient, connected_order
from tests.helpers.interleaving import TIMEOUT, Actor

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(live_server, connection, tasks_sent):
    return ApiClient(live_server.url, connection.created.client_id, connection.created.client_secret)


def test_a_reader_paging_while_events_commit_out_of_id_order_gets_every_event_once(
    api,
    connection,
    order,
    fake_platform,
    connected_product,
):
    other = connected_order(fake_platform, transaction_id="txn-connected-2", product_name=connected_product.name)
    seen = []

    def page(after):
        body = api.get("/events", after=after).json()
        seen.extend(event["webhook_id"] for event in body["events"])
        return body["next_after"]

    cursor = page(0)  # the two orders' order.created
    stored, commit = threading.Event(), threading.Event()

    def first_worker():
        with transaction.atomic():
            event = event_store(connection=connection, order=order, event_type="order.failed", data={})
            stored.set()
            assert commit.wait(TIMEOUT)
        return event

    worker = Actor(first_worker, name="first worker")
    assert stored.wait(TIMEOUT)
    second = event_store(connection=connection, order=other, event_type="order.failed", data={})
    cursor = page(cursor)  # the second order's event; the first's is not committed
    commit.set()
    first = worker.outcome()
    assert first.pk < second.pk  # committed out of id order
    cursor = page(cursor)
    assert page(cursor) == cursor  # nothing more

    made = list(Event.objects.filter(connection=connection).values_list("message_id", flat=True))
    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen)) == 4  # each once, none skipped
    assert seen[2:] == [second.message_id, first.message_id]  # in the order they became visible
