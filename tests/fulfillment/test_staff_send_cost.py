"""What a staff delivery costs the worker in statements: its send (the order's run) and its callback.

A staff-worked order, acknowledged, with a final delivery and one document waiting; a connected
product beside it (its two announcements then ask whether it is routed). Counted as the worker runs
them, each in its own transactions (BEGIN and COMMIT counted: they are round trips too), once the
catalog's change marker is gone, as it is between changes. These are today's counts: a change that
adds a statement fails here with the statements listed (docs/performance.md, "The worker, third
round").
"""

import io

import pytest
from django.conf import settings
from django.core.cache import cache
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.product_cache import CATALOG_CACHE_KEYS, catalog_connected
from partner.connector.services import connection_create
from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.orders.history import step_record, steps_atomic, steps_batched
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_run
from partner.fulfillment.sending.callbacks import delivery_confirm
from partner.fulfillment.staff import services as staff
from tests.helpers.products import LENDER_CREDENTIALS, product_create
from tests.helpers.staff_orders import staff_member

pytestmark = pytest.mark.django_db(transaction=True)

TXN = "txn-send-cost-1"
LOAN = {"property": {"streetAddress": "500 Howard Street", "postalCode": "94105"}}
ENTITLEMENTS = {
    "data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "response": {"fields": ["property", "appraisal"]}}]}
}
# The send: the lease taken (1), the deliveries waiting and their documents (2), the lease confirmed
# before the slot request (1), the slot kept (1), the upload's fence and its end (2), the PATCH's
# fence with its attempt and response version (1), then one transaction: the order locked, the
# delivery recorded as sent, the order settled, the run's history lines (4, and BEGIN and COMMIT);
# the lease released where nothing waits (1).
SEND = 15
# The callback naming its response version (the platform's does): the order locked, the delivery
# confirmed with the earlier ones the service processed before it (1), the two announcements' "is it
# routed?" (1: the second remembers the first's answer), the order settled, the history lines, in
# one transaction (5, and BEGIN and COMMIT). The callback's task adds its lease and its end (2) and
# the GET of the event.
CALLBACK = 5


class Upload(io.BytesIO):
    name = "report.pdf"
    size = 64


@pytest.fixture
def waiting(fake_platform, tasks_sent):
    """The order, acknowledged, its final delivery with one document waiting for its run."""
    settings.PUBLIC_BASE_URL = "https://partner.example"
    product_create(name="appraisal", fulfiller="staff_worked", raw={"entitlements": ENTITLEMENTS})
    other = product_create(name="survey", fulfiller=CONNECTED, raw={"name": "survey", "entitlements": ENTITLEMENTS})
    connection_create(name="acme", endpoint_url="http://127.0.0.1:9/h", products=[other], notify_email="o@x.example")
    request = {"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS}
    fake_platform.transaction_add(TXN, request=request, product_name="appraisal")
    order, _, _ = order_open(transaction_id=TXN, product_name="appraisal")
    order_run(order_id=order.pk)  # the acknowledgement
    delivery_confirm(transaction_id=TXN, event_id="ev-ack", version=1)
    user = staff_member()
    staff.order_take(order_id=order.pk, user=user)
    staff.document_attach(order_id=order.pk, upload=Upload(b"%PDF-1.7\n" + b"x" * 55), user=user)
    staff.delivery_request(order_id=order.pk, final=True, partner_status="Report attached", user=user)
    cache.delete_many(CATALOG_CACHE_KEYS)  # the change marker gone, and the catalog cached: as between changes
    catalog_connected()
    return order


def _counted(action) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        action()
    return [query["sql"] for query in queries.captured_queries]


def test_a_staff_delivery_s_send_writes_its_history_lines_in_its_record_s_transaction(waiting):
    sent = _counted(lambda: order_run(order_id=waiting.pk))

    assert len(sent) == SEND, sent
    assert sent.count("BEGIN") == sent.count("COMMIT") == 1, sent  # the record's; none for the lines
    lines = [i for i, sql in enumerate(sent) if sql.startswith('INSERT INTO "fulfillment_orderstep"')]
    assert len(lines) == 1 and sent.index("BEGIN") < lines[0] < sent.index("COMMIT"), sent
    names = list(waiting.steps.order_by("-id").values_list("name", flat=True)[:3])
    assert names == ["sent", "uploaded", "slots_requested"]


def test_a_staff_delivery_s_callback_stays_within_its_statements(waiting):
    order_run(order_id=waiting.pk)

    confirmed = _counted(lambda: delivery_confirm(transaction_id=TXN, event_id="ev-final", version=2))

    assert len(confirmed) == CALLBACK + 2, confirmed
    assert Order.objects.get(pk=waiting.pk).status == OrderStatus.REQUEST_COMPLETED


def test_lines_of_a_transaction_that_rolls_back_are_written_at_the_batch_s_end(waiting):
    before = waiting.steps.count()
    with steps_batched():
        step_record(waiting, "one")
        with pytest.raises(RuntimeError), steps_atomic():
            raise RuntimeError("the record failed")
        assert waiting.steps.count() == before
    assert list(waiting.steps.order_by("id").values_list("name", flat=True))[before:] == ["one"]


def test_lines_written_in_a_committed_transaction_are_written_once(waiting):
    before = waiting.steps.count()
    with steps_batched():
        step_record(waiting, "one")
        with steps_atomic():
            pass
        assert waiting.steps.count() == before + 1
        step_record(waiting, "two")
    assert list(waiting.steps.order_by("id").values_list("name", flat=True))[before:] == ["one", "two"]


def test_a_line_recorded_as_the_transaction_commits_is_kept_for_the_batch_s_end(waiting):
    before = waiting.steps.count()
    with steps_batched():
        step_record(waiting, "one")
        with steps_atomic():
            transaction.on_commit(lambda: step_record(waiting, "at the commit"))
        assert waiting.steps.count() == before + 1
    assert list(waiting.steps.order_by("id").values_list("name", flat=True))[before:] == ["one", "at the commit"]


def test_lines_written_in_a_nested_transaction_are_the_outer_one_s(waiting):
    """Written once, with the outer transaction's work, and gone with it if it rolls back."""
    before = waiting.steps.count()
    with steps_batched():
        step_record(waiting, "one")
        with pytest.raises(RuntimeError), transaction.atomic():
            with steps_atomic():
                pass
            assert waiting.steps.count() == before + 1
            raise RuntimeError("the outer transaction failed")
        step_record(waiting, "two")
    assert list(waiting.steps.order_by("id").values_list("name", flat=True))[before:] == ["two"]
