"""The connector's events, rule by rule: made from the fulfillment's announcements in the
transaction that made them, for connected orders only, as the connection wants them."""

import contextlib

import pytest
from django.core.cache import cache
from django.db import transaction

from partner.catalog import product_cache
from partner.catalog.product_cache import CONNECTED_CACHE_KEY, catalog_connected
from partner.connector.events import order_announced_receive
from partner.connector.models import Event, EventState, OrderRoute
from partner.fulfillment.models import Delivery, DeliveryKind, Order, OrderStatus
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.services import order_complete, order_fail
from partner.fulfillment.sending.callbacks import delivery_confirm
from partner.fulfillment.staff import services as staff
from tests.helpers.connector import LOAN, TXN, connected_order
from tests.helpers.orders import automated_order
from tests.helpers.products import product_create
from tests.helpers.staff_orders import staff_member

pytestmark = pytest.mark.django_db


def events(order) -> list[Event]:
    return list(Event.objects.filter(order=order).order_by("pk"))


def test_a_connected_order_is_acknowledged_at_once_and_its_system_told(fake_platform, order, connection):
    [ack] = [payload for _, payload in fake_platform.called("patch_response")]
    assert ack["status"] == "processing" and ack["partnerStatus"] == "Order received"
    assert order.status == OrderStatus.WITH_STAFF and order.staff_worked
    assert order.assigned_to == connection.user  # the system works it
    [created] = events(order)
    assert created.type == "order.created" and created.state == EventState.PENDING
    assert created.message_id.startswith("msg_")
    data = created.payload["data"]
    assert created.payload["type"] == "order.created" and created.payload["timestamp"]
    assert data["order"]["id"] == order.pk and data["order"]["status"] == "WITH_STAFF"
    assert data["order"]["version"] == 1 and data["order"]["due_at"]
    request = data["request"]
    assert request["options"] == {"comments": "Gate code 1234"} and request["notes"] == "Gate code 1234"
    assert request["ordered_by"]["username"] == "lender.demo"
    assert data["delivery"]["kind"] == "acknowledgement"  # as the docs' event table says


def test_order_created_carries_the_loan_the_request_entitlement_allows_and_never_credentials(order):
    [created] = events(order)
    loan = created.payload["data"]["request"]["loan"]
    assert set(loan) == {"property", "loanNumber"}  # the borrower is not entitled
    text = str(created.payload)
    assert "demo-password-1" not in text and "credentials" not in text


def _order_with_request_fields(fake_platform, product, fields):
    from partner.catalog.product_cache import catalog_cache_drop

    product.raw = {
        "name": product.name,
        "entitlements": {"data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "request": {"fields": fields}}]}},
    }
    product.save(update_fields=["raw"])
    catalog_cache_drop()
    order = connected_order(fake_platform, transaction_id="txn-paths-1", product_name=product.name)
    [created] = events(order)
    return created.payload["data"]["request"]["loan"]


@pytest.mark.parametrize(
    ("fields", "loan"),
    [
        # the spec's own form (section "Transaction": `request.loan.property`)
        (["loan.property", "loan.loanNumber"], {"property": LOAN["property"], "loanNumber": LOAN["loanNumber"]}),
        # a deeper path keeps that sub-tree only
        (["loan.property.postalCode"], {"property": {"postalCode": "94105"}}),
        (["property.streetAddress", "loan.property.postalCode"], {"property": LOAN["property"]}),
        # a path and one below it: the whole of the upper one
        (["loan.property.city", "property"], {"property": LOAN["property"]}),
        (["loan"], LOAN),
    ],
)
def test_order_created_reads_the_entitlement_s_fields_as_loan_paths(
    fake_platform, connection, connected_product, fields, loan
):
    assert _order_with_request_fields(fake_platform, connected_product, fields) == loan


def _unreadable_count(reason: str) -> float:
    from partner.connector.metrics import ENTITLEMENT_UNREADABLE

    return ENTITLEMENT_UNREADABLE.labels(product="appraisal", reason=reason)._value.get()


@pytest.mark.parametrize(
    ("fields", "loan", "reason"),
    [
        # no field is a loan path: the service's data stands (it sends only what is entitled)
        ([{"path": "property"}, "loan..city"], LOAN, "not_a_path"),
        ("property", LOAN, "not_a_path"),
        # a readable one is still applied
        ([7, "loan.loanNumber"], {"loanNumber": LOAN["loanNumber"]}, "not_a_path"),
        # paths that match none of the loan's data: empty, but never without a word
        (["loan.subjectProperty"], {}, "matches_nothing"),
    ],
)
def test_an_unreadable_entitlement_is_logged_and_counted_never_silent(
    fake_platform, connection, connected_product, caplog, fields, loan, reason
):
    before = _unreadable_count(reason)
    with caplog.at_level("WARNING", logger="partner.connector.events"):
        assert _order_with_request_fields(fake_platform, connected_product, fields) == loan
    assert _unreadable_count(reason) == before + 1
    [warning] = [r for r in caplog.records if r.name == "partner.connector.events"]
    assert "appraisal" in warning.getMessage() and "request data entitlement" in warning.getMessage()
    assert "94105" not in warning.getMessage()  # never the borrower's data


def test_a_staff_worked_order_makes_no_event(fake_platform, connection):
    product_create(name="inspection", fulfiller="staff_worked")
    order = connected_order(fake_platform, transaction_id="txn-staff-2", product_name="inspection")
    assert order.status == OrderStatus.WITH_STAFF
    assert events(order) == [] and order.assigned_to is None


def test_the_lifecycle_makes_one_event_per_moment_with_growing_versions(order, connection):
    update = staff.status_update_post(order_id=order.pk, text="Inspection booked", user=connection.user)
    Delivery.objects.filter(pk=update.pk).update(state="sent", sequence=2)
    delivery_confirm(transaction_id=TXN, event_id="ev-1", version=2)
    final = staff.delivery_request(order_id=order.pk, final=True, partner_status="Done", user=connection.user)
    Delivery.objects.filter(pk=final.pk).update(state="sent", sequence=3)
    delivery_confirm(transaction_id=TXN, event_id="ev-2", version=3)
    kinds = [(e.type, e.payload["data"]["order"]["version"]) for e in events(order)]
    assert kinds == [
        ("order.created", 1),
        ("order.delivery.confirmed", 2),  # the acknowledgement: processed before the status update
        ("order.delivery.confirmed", 3),
        ("order.delivery.confirmed", 4),
        ("order.completed", 5),
    ]
    confirmed = events(order)[3].payload["data"]["delivery"]
    assert confirmed["id"] == final.pk and confirmed["kind"] == DeliveryKind.FINAL
    assert events(order)[-1].payload["data"]["order"]["status"] == OrderStatus.REQUEST_COMPLETED


def test_a_replayed_completion_makes_no_second_event(order):
    order_complete(transaction_id=TXN, because="a staff member")
    order_complete(transaction_id=TXN, because="a staff member")
    assert [e.type for e in events(order)] == ["order.created", "order.completed"]


def test_a_failure_is_told(order):
    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    assert [e.type for e in events(order)][-1] == "order.failed"


def test_a_staff_take_over_is_told_and_the_system_take_is_not(order, connection):
    staff.order_take(order_id=order.pk, user=connection.user)  # the system's own: nothing new
    assert [e.type for e in events(order)] == ["order.created"]
    staff.order_take(order_id=order.pk, user=staff_member(), take_over=True)
    assert [e.type for e in events(order)] == ["order.created", "order.taken_over"]
    assert events(order)[-1].payload["data"]["order"]["worked_by"] == "appraiser.ann"


def test_the_system_is_given_its_order_by_the_one_assignment_with_its_step(order, connection):
    # `orders.services.order_assign`, as a staff member's take: the step, by the system's user, and
    # the announcement, which tells the system nothing of its own take.
    taken = list(order.steps.filter(name__in=["taken", "taken_over"]).values_list("name", "detail", "actor"))
    assert taken == [("taken", "", connection.user.get_username())]
    assert [e.type for e in events(order)] == ["order.created"]


def test_an_order_someone_took_before_its_acknowledgement_stays_theirs(order, connection):
    person = staff_member("appraiser.bo")
    Order.objects.filter(pk=order.pk).update(assigned_to=person)
    with transaction.atomic():
        announcements.order_announce(order_id=order.pk, what=announcements.ACKNOWLEDGED)
    assert Order.objects.get(pk=order.pk).assigned_to == person
    assert order.steps.filter(name__in=["taken", "taken_over"]).count() == 1  # the system's first, no other
    assert events(order)[-1].payload["data"]["order"]["worked_by"] == "appraiser.bo"


def test_an_event_is_stored_with_its_move_or_not_at_all(order):
    class Undone(Exception):
        pass

    with pytest.raises(Undone), transaction.atomic():
        Order.objects.filter(pk=order.pk).update(status=OrderStatus.FAILED)
        announcements.order_announce(order_id=order.pk, what=announcements.FAILED)
        assert [e.type for e in events(order)][-1] == "order.failed"
        raise Undone
    assert [e.type for e in events(order)] == ["order.created"]


def test_a_connection_gets_only_the_types_it_wants(order, connection):
    connection.event_types = ["order.completed"]
    connection.save()
    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    assert [e.type for e in events(order)] == ["order.created"]


def test_a_connection_without_an_endpoint_keeps_its_events_for_the_feed(order, connection):
    connection.endpoint_url = ""
    connection.save()
    order_fail(order=order, code="retries_exhausted", reason="Gave up")
    assert events(order)[-1].state == EventState.PULL


@pytest.mark.django_db(transaction=True)
def test_two_moves_of_one_order_committing_together_never_share_a_version(order, connection):
    """Two deliveries confirmed at once, each in its worker's transaction: the second waits for the
    first's commit (the order's row), so their versions follow each other and so do their rows."""
    import threading

    from django.db import connection as db
    from django.db import connections

    from partner.connector.events import event_store

    if db.vendor != "postgresql":
        pytest.skip("two transactions at once need a database that runs them at once (PostgreSQL)")
    first_stored, release = threading.Event(), threading.Event()
    versions: dict[str, int] = {}

    def move(name: str, *, hold: bool) -> None:
        try:
            with transaction.atomic():
                event = event_store(connection=connection, order=order, event_type="order.delivery.confirmed", data={})
                versions[name] = event.payload["data"]["order"]["version"]
                if hold:
                    first_stored.set()
                    release.wait(timeout=10)  # still uncommitted while the other one stores its event
        finally:
            connections.close_all()

    first = threading.Thread(target=move, args=("first",), kwargs={"hold": True})
    first.start()
    assert first_stored.wait(timeout=10)
    second = threading.Thread(target=move, args=("second",), kwargs={"hold": False})
    second.start()
    second.join(timeout=0.5)
    assert second.is_alive()  # it waits for the first one's commit
    release.set()
    first.join(timeout=10)
    second.join(timeout=10)
    assert (versions["first"], versions["second"]) == (2, 3)  # order.created was 1
    stored = [e.payload["data"]["order"]["version"] for e in Event.objects.filter(order=order).order_by("pk")]
    assert stored == [1, 2, 3]


# What an announcement costs (docs/performance.md, "The announcements, cheap for the worker"): every
# move of every order is announced, twice per staff delivery and six times per connected order.


@pytest.fixture
def cache_reads(monkeypatch):
    """The keys read from the shared cache, in order."""
    read = []
    get = cache.get

    def get_recorded(key, *args, **kwargs):
        read.append(key)
        return get(key, *args, **kwargs)

    monkeypatch.setattr(product_cache.cache, "get", get_recorded)
    return read


def test_where_no_product_is_connected_an_announcement_reads_a_small_key_and_no_row(
    fake_platform, django_assert_num_queries, cache_reads
):
    order = automated_order(fake_platform, "txn-automated-1")
    delivery = Delivery.objects.create(order=order, kind=DeliveryKind.FINAL)
    assert catalog_connected() == frozenset()  # as it stands between changes: cached
    cache_reads.clear()
    with django_assert_num_queries(0):
        announcements.order_announce(order_id=order.pk, what=announcements.DELIVERY_CONFIRMED, delivery_id=delivery.pk)
        announcements.order_announce(order_id=order.pk, what=announcements.COMPLETED)
        announcements.order_announce(order_id=order.pk, what=announcements.TAKEN)
    assert cache_reads == [CONNECTED_CACHE_KEY] * 3  # the connected products' names, never the whole catalog
    assert not Event.objects.exists()


def test_an_order_never_routed_costs_one_small_statement_beside_a_connected_product(
    fake_platform, connection, django_assert_num_queries, cache_reads
):
    product_create(name="inspection", fulfiller="staff_worked")
    order = connected_order(fake_platform, transaction_id="txn-staff-3", product_name="inspection")
    catalog_connected()
    cache_reads.clear()
    with django_assert_num_queries(1):  # is it routed? no: nothing else read
        announcements.order_announce(order_id=order.pk, what=announcements.COMPLETED)
    assert cache_reads == [CONNECTED_CACHE_KEY]
    assert events(order) == []


def test_an_announcing_transaction_asks_whether_an_order_is_routed_once(
    fake_platform, connection, django_assert_num_queries
):
    # A callback's confirmation and completion, under the order's lock (`announcements.atomic`).
    product_create(name="inspection", fulfiller="staff_worked")
    order = connected_order(fake_platform, transaction_id="txn-staff-4", product_name="inspection")
    catalog_connected()
    # Is it routed? No, and the second announcement knows it.
    with announcements.atomic(), django_assert_num_queries(1):
        announcements.order_announce(order_id=order.pk, what=announcements.DELIVERY_CONFIRMED)
        announcements.order_announce(order_id=order.pk, what=announcements.COMPLETED)
    assert events(order) == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ends", ["commits", "rolls back"])
def test_what_an_announcing_transaction_remembers_ends_with_it(fake_platform, connection, ends):
    """The next transaction asks again, whether the one that remembered committed or rolled back."""

    class Undone(Exception):
        pass

    product_create(name="inspection", fulfiller="staff_worked")
    order = connected_order(fake_platform, transaction_id="txn-staff-5", product_name="inspection")
    ended = pytest.raises(Undone) if ends == "rolls back" else contextlib.nullcontext()
    with ended, announcements.atomic():
        announcements.order_announce(order_id=order.pk, what=announcements.DELIVERY_CONFIRMED)  # not routed
        if ends == "rolls back":
            raise Undone
    OrderRoute.objects.create(order=order, connection=connection)  # as a hand-over would, later
    with announcements.atomic():
        announcements.order_announce(order_id=order.pk, what=announcements.COMPLETED)
    assert [e.type for e in events(order)] == ["order.completed"]


def test_an_acknowledgement_in_an_announcing_transaction_tells_what_it_routed(fake_platform, order, connection):
    # An order not routed yet (as before its acknowledgement) is asked about, then acknowledged in
    # the same transaction: the later announcements go to the route the acknowledgement recorded.
    OrderRoute.objects.filter(order=order).delete()
    Event.objects.filter(order=order).delete()
    with announcements.atomic():
        announcements.order_announce(order_id=order.pk, what=announcements.DELIVERY_CONFIRMED)  # not routed
        announcements.order_announce(order_id=order.pk, what=announcements.ACKNOWLEDGED)
        announcements.order_announce(order_id=order.pk, what=announcements.COMPLETED)
    assert OrderRoute.objects.get(order=order).connection == connection
    assert [e.type for e in events(order)] == ["order.created", "order.completed"]


@pytest.mark.parametrize(
    ("what", "statements"),
    [
        # whether it is routed (1); the order with its route, connection and people (1); the event:
        # the savepoint, the order's lock, the count of its events, the INSERT, the release (5); and the
        # delivery when one is named
        (announcements.COMPLETED, 7),
        (announcements.DELIVERY_CONFIRMED, 8),
        (announcements.TAKEN, 2),  # the system's own assignment: read, nothing stored
    ],
)
def test_a_connected_order_s_move_reads_the_order_with_its_connection_in_one_statement(
    order, connection, django_assert_num_queries, cache_reads, what, statements
):
    delivery_id = Delivery.objects.filter(order=order).values_list("pk", flat=True).first()
    assert delivery_id is not None
    before = len(events(order))
    cache_reads.clear()
    with django_assert_num_queries(statements):
        announcements.order_announce(
            order_id=order.pk, what=what, delivery_id=delivery_id if what == announcements.DELIVERY_CONFIRMED else None
        )
    assert cache_reads == [CONNECTED_CACHE_KEY]
    stored = events(order)[before:]
    assert len(stored) == (0 if what == announcements.TAKEN else 1)
    if what == announcements.DELIVERY_CONFIRMED:
        assert stored[0].payload["data"]["delivery"]["id"] == delivery_id


def test_an_acknowledgement_routes_assigns_and_tells_in_twelve_statements(
    fake_platform, order, connection, django_assert_num_queries
):
    # A second connected order, its acknowledgement announced again as if for the first time (not
    # routed, nobody assigned): what the connector's receiver costs at an order's acknowledgement.
    second = connected_order(fake_platform, transaction_id="txn-ack-2", product_name="appraisal")
    OrderRoute.objects.filter(order=second).delete()
    Order.objects.filter(pk=second.pk).update(assigned_to=None)
    # The order read with its route (1); the connection (1); the route recorded (1: INSERT … ON
    # CONFLICT DO NOTHING); the assignment and its step (2); the nested TAKEN's route and order (2);
    # the event (5). The product's entitlement from the cached catalog, no statement.
    with django_assert_num_queries(12):
        order_announced_receive(None, order_id=second.pk, what=announcements.ACKNOWLEDGED)
    assert OrderRoute.objects.get(order=second).connection == connection
    assert Order.objects.get(pk=second.pk).assigned_to == connection.user
    assert events(second)[-1].type == "order.created" and events(second)[-1].payload["data"]["request"]["loan"]
