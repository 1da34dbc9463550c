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
from partner.fulfillment.sending.callbacks import delivery_confirm
from tests.helpers.connector import ApiClient, connected_order
from tests.helpers.interleaving import TIMEOUT, Actor, Pause

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


def test_a_reader_paging_while_two_orders_confirmations_commit_out_of_id_order_sees_both(
    api, connection, order, fake_platform, connected_product
):
    """The same from the pipeline's own path: two "processed" callbacks, one per order, each making
    an `order.delivery.confirmed` event in its transaction; the first is held at its checkpoint
    (`callback.confirmed`, after its event is stored, before its commit) while the second commits
    and a system pages the feed; then the first commits. The next page brings it."""
    other = connected_order(fake_platform, transaction_id="txn-connected-2", product_name=connected_product.name)
    cursor = api.get("/events").json()["next_after"]  # the two orders' order.created

    with Pause("callback.confirmed") as held:
        first = Actor(lambda: delivery_confirm(transaction_id=order.transaction_id, event_id="ev-1"), name="first")
        held.reached()  # its event stored, not committed
        assert delivery_confirm(transaction_id=other.transaction_id, event_id="ev-2") is not None
        page = api.get("/events", after=cursor).json()
        assert [e["payload"]["data"]["order"]["id"] for e in page["events"]] == [other.pk]
        held.resume()
        assert first.outcome() is not None

    late = Event.objects.get(order=order, type="order.delivery.confirmed")
    assert late.pk < Event.objects.get(order=other, type="order.delivery.confirmed").pk  # out of id order
    following = api.get("/events", after=page["next_after"]).json()
    assert [e["webhook_id"] for e in following["events"]] == [late.message_id]  # not skipped
