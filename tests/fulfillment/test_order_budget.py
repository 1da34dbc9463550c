"""What one automated order costs us: SQL queries and Celery tasks, per webhook and per order.

The order runs as in production, step by step, in this process: the `created` webhook stored by the
intake, handed to the broker by the relay, processed (the order opened and the order fulfilled in
the same task, against a fake of the service: its four calls), then the `processed` callback
stored, relayed and processed (the order completed). Each step's queries are counted with Django's
`CaptureQueriesContext`, the tasks with `tasks_sent`. The budgets below are today's counts: a change
that adds a query or a task to an order fails here and says which step it was. Every statement
of these steps runs on Django's cursors, where the query log sees it: the intake's INSERT too
(`partner/inbox/intake.py`), on the one path production takes.
"""

import json

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from partner.fulfillment.models import Order, OrderStatus
from partner.inbox.dispatch import notification_process
from partner.inbox.intake import webhook_receive
from partner.inbox.models import Notification, NotificationState
from partner.inbox.outbox import notifications_relay
from partner.platform.signatures import signature_compute
from partner.platform.urns import event_resource_type, response_processed_event_type, transaction_resource_type
from tests.helpers.orders import order_ran
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db

LOAN = {
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"}
}

# Statements of each step of one automated order once the process is warm (the signing secrets
# read, the lender's credentials checked within the minute): what every order after the first costs.
# Transaction control (SAVEPOINT, RELEASE) is not counted: it is BEGIN/COMMIT outside the tests.
# "process (created)" is the notification taken, the order opened taken, the product read from the
# cache, the lender's account and company credential checked, the prepare's fence (the lease
# confirmed, the order's row locked), the delivery, its documents and the order prepared (3), the
# lease confirmed before the slot request, the slots kept, the upload's
# fence with its start and its end (2), the PATCH's fence with its attempt and response version,
# the order locked for the record, the delivery recorded as sent, the order's delivery time and
# resource, the order settled (delivered), the steps, the order released where nothing waits, and
# the notification finished. "process (processed)": the notification taken, the order found and
# locked, the delivery confirmed, the order settled (completed), the step, the notification finished.
# The same order cost 39 before the work on performance (2026-11-24 morning) and 19 after it; every
# response being a stored delivery sent by one fenced sender costs 6 of these: the delivery's row
# (stored, sent, confirmed), the fences before the slot request and the PATCH, and the slots kept
# apart from the documents' INSERT. Settling an order by one rule under the order's lock costs 3
# more (the lock of the record and of the callback, the delivery time apart from the move), and the
# release apart from the record 1, the prepare's fence 1 (a worker whose lease ran out during the
# work must store nothing: tests/fulfillment/test_fencing.py).
BUDGET = {
    "intake (created)": 1,
    "relay (created)": 1,
    "process (created)": 20,
    "intake (processed)": 1,
    "relay (processed)": 1,
    "process (processed)": 6,
}
BEFORE = 39


def webhook(resource_type: str, resource_id: str, resource_ref: str) -> bytes:
    return json.dumps(
        {
            "eventTime": "2026-11-24T10:00:00Z",
            "eventType": "created",
            "meta": {
                "resourceType": resource_type,
                "resourceId": resource_id,
                "instanceId": "address-verification",
                "resourceRef": resource_ref,
            },
        }
    ).encode()


def receive(body: bytes) -> int:
    signature = signature_compute(body, settings.SVC_SIGNING_SECRETS[0])
    return webhook_receive(body=body, signature=signature, headers={}, remote_addr="127.0.0.1")


class Counter(dict):
    def step(self, name, action):
        with CaptureQueriesContext(connection) as queries:
            result = action()
        statements = [query["sql"] for query in queries.captured_queries]
        self[name] = len([sql for sql in statements if not sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))])
        self.statements[name] = statements
        return result


def order(fake_platform, counts: "Counter", number: int) -> None:
    """One automated order from its webhook to its completion, each step counted in `counts`."""
    txn, event = f"txn-budget-{number}", f"evt-budget-{number}"
    fake_platform.transaction_add(
        txn,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    fake_platform.events[(txn, event)] = response_processed_event_type()
    base = f"{settings.SVC_BASE_URL}/partner/v2/transactions/{txn}"
    created = counts.step("intake (created)", lambda: receive(webhook(transaction_resource_type(), txn, base)))
    counts.step("relay (created)", notifications_relay)
    counts.step("process (created)", lambda: notification_process(notification_id=created))
    order = Order.objects.get(transaction_id=txn)
    processed = counts.step(
        "intake (processed)", lambda: receive(webhook(event_resource_type(), event, f"{base}/events/{event}"))
    )
    counts.step("relay (processed)", notifications_relay)
    counts.step("process (processed)", lambda: notification_process(notification_id=processed))
    order.refresh_from_db()
    assert order.status == OrderStatus.REQUEST_COMPLETED


@pytest.fixture
def second_order(fake_platform, tasks_sent, django_capture_on_commit_callbacks):
    """Two orders; the second one's statements per step and its tasks."""
    product_create()
    counts = Counter()
    counts.statements = {}
    with django_capture_on_commit_callbacks(execute=True):
        order(fake_platform, counts, 1)
    tasks_sent.clear()
    counts.clear()
    with django_capture_on_commit_callbacks(execute=True):
        order(fake_platform, counts, 2)
    assert Notification.objects.filter(state=NotificationState.PROCESSED).count() == 4
    return counts, list(tasks_sent)


def test_each_step_of_an_order_stays_within_its_query_budget(second_order):
    counts, tasks = second_order
    over = {step: (counts[step], budget) for step, budget in BUDGET.items() if counts[step] > budget}
    detail = {step: counts.statements[step] for step in over}
    assert not over, f"steps over their budget (counted, budget): {over}; their statements: {detail}"


def test_an_order_costs_fewer_statements_than_before_the_work_on_performance(second_order):
    counts, _ = second_order
    assert sum(counts.values()) <= sum(BUDGET.values()) < BEFORE


def test_an_order_publishes_two_tasks_one_per_webhook(second_order):
    """The order's work runs in its transaction webhook's task: no task of its own."""
    _, tasks = second_order
    assert sorted(name for name, _ in tasks) == ["inbox.process", "inbox.process"], tasks


def test_a_webhook_costs_one_insert_one_relay_statement_and_one_task(second_order):
    """Per webhook, before its handler's own work: stored with one INSERT, handed over with one
    statement (per relay round, however many it carries) and one task."""
    counts, tasks = second_order
    assert counts["intake (created)"] == counts["intake (processed)"] == 1
    assert counts["relay (created)"] == counts["relay (processed)"] == 1
    assert [name for name, _ in tasks].count("inbox.process") == 2  # one per webhook


def test_a_run_the_service_rate_limits_costs_two_statements(fake_platform):
    """A 429 on the order's first call: the take, and the lease given back with the error (the task
    then records when it comes back: one more)."""
    from partner.fulfillment.orders.services import order_open
    from partner.platform.errors import ServiceRateLimitError

    product_create()
    fake_platform.transaction_add(
        "txn-limited", request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS}
    )
    order, _, _ = order_open(transaction_id="txn-limited", product_name="address-verification")
    fake_platform.fail("get_transaction", ServiceRateLimitError("rate limited", status=429, retry_after=10))

    with CaptureQueriesContext(connection) as queries, pytest.raises(ServiceRateLimitError):
        order_ran(order_id=order.pk)

    assert len(queries.captured_queries) == 2, [q["sql"] for q in queries.captured_queries]
    order.refresh_from_db()
    assert order.claimed_until is None and "rate limited" in order.last_error


def test_a_document_s_slot_is_kept_with_a_plain_update(second_order):
    """One document's slot is one UPDATE of its row, not `bulk_update`'s CASE per field."""
    counts, _ = second_order
    kept = [
        sql for sql in counts.statements["process (created)"] if sql.startswith("UPDATE") and "upload_location" in sql
    ]
    assert len(kept) == 1 and "CASE" not in kept[0], kept
