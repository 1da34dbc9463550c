"""The reconciliation's cost does not grow with the service's history: the cheap pass reads the end of
the transaction list (and the pages of older awaiting orders), falls back to every page when the
list is not append-only as assumed, and the full pass runs when due.

Over real HTTP against the sandbox, whose list (#7) is in creation order; calls are counted by the
`service_calls` fixture. Page size 50 (the spec's maximum): 300 finished transactions are 6 pages.
"""

import math
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from partner.fulfillment.enqueue import ORDER_RUN_TASK
from partner.fulfillment.models import Order, OrderStatus, ReconciliationState
from partner.fulfillment.recovery.reconciliation import MARKER_SIZE, PAGE_SIZE, STATE_NAME, transactions_reconcile
from partner.platform.errors import ServiceUnavailableError
from partner.sandbox.models import Transaction
from partner.sandbox.transactions import transaction_create

pytestmark = pytest.mark.django_db


def history(seed, count: int) -> None:
    """`count` finished transactions in the sandbox (appended to its list)."""
    product, user, loan = seed.products["address-verification"], seed.users["lender.demo"], seed.loans[0]
    Transaction.objects.bulk_create(
        [
            Transaction(product=product, user=user, loan=loan, status="completed", request={"type": "NEW_REQUEST"})
            for _ in range(count)
        ],
        batch_size=500,
    )


def new_order(seed, **fields) -> Transaction:
    """A transaction whose webhook never came (none is sent)."""
    return transaction_create(
        product=seed.products["address-verification"],
        user=seed.users["lender.demo"],
        loan=seed.loans[0],
        send_webhook=False,
        **fields,
    )


def list_calls(service_calls) -> int:
    return sum(
        1
        for call in service_calls
        if call["method"] == "GET" and urlsplit(call["url"]).path.endswith("/partner/v2/transactions")
    )


def run(service_calls) -> tuple[int, int]:
    """One reconciliation: (orders opened, list calls it made)."""
    service_calls.clear()
    opened = transactions_reconcile()
    return opened, list_calls(service_calls)


def delivered_long_ago(transaction_id: str) -> Order:
    return Order.objects.create(
        transaction_id=transaction_id,
        status=OrderStatus.RESPONSE_DELIVERED,
        delivered_at=timezone.now() - timedelta(hours=1),
    )


def state() -> ReconciliationState:
    return ReconciliationState.objects.get(name=STATE_NAME)


@pytest.mark.parametrize("finished", [100, 300])
def test_the_cheap_pass_costs_one_call_whatever_the_history(demo, service_calls, tasks_sent, finished):
    history(demo, finished)
    assert run(service_calls) == (0, math.ceil(finished / PAGE_SIZE))  # no position yet: every page

    assert run(service_calls) == (0, 1)  # nothing new: one call

    for _ in range(4):
        new_order(demo)
    history(demo, 1)
    lost = new_order(demo)
    # 6 new, one of them finished: still one call, and each unfinished one gets its order and a worker.
    assert run(service_calls) == (5, 1)
    order = Order.objects.get(transaction_id=lost.id)
    assert order.status == OrderStatus.VALIDATION_REQUESTED
    assert (ORDER_RUN_TASK, {"order_id": order.pk}) in tasks_sent
    assert state().position == finished + 6

    assert run(service_calls) == (0, 1)  # known now: nothing opened twice


def test_the_cheap_pass_completes_awaiting_orders_near_the_end_and_further_back(demo, service_calls, tasks_sent):
    history(demo, 120)
    waiting, done_there = new_order(demo), new_order(demo)
    Transaction.objects.filter(pk__in=[waiting.id, done_there.id]).update(status="processing")
    waiting_order, done_order = delivered_long_ago(waiting.id), delivered_long_ago(done_there.id)
    run(service_calls)  # full pass: both seen unfinished, their positions kept
    assert state().watched == {waiting.id: 120, done_there.id: 121}

    # Both fall far behind the end of the list; then the service completes one (its callback lost).
    history(demo, 2 * PAGE_SIZE)
    assert run(service_calls) == (0, 3)  # catching up with 100 new items: 3 pages, no more
    Transaction.objects.filter(pk=done_there.id).update(status="completed")

    assert run(service_calls) == (0, 2)  # the end, and the one page where both were seen
    done_order.refresh_from_db()
    assert done_order.status == OrderStatus.REQUEST_COMPLETED
    assert done_order.steps.get(name="completed").detail == "the service's transaction list says completed"
    waiting_order.refresh_from_db()
    assert waiting_order.status == OrderStatus.RESPONSE_DELIVERED  # still processing there: waits

    # An awaiting order among the last items is seen in the same call as the end of the list.
    last = new_order(demo)
    delivered_long_ago(last.id)
    run(service_calls)
    Transaction.objects.filter(pk=last.id).update(status="completed")
    assert run(service_calls) == (0, 2)  # the end (with `last`), and `waiting`'s page
    assert Order.objects.get(transaction_id=last.id).status == OrderStatus.REQUEST_COMPLETED
    assert set(state().watched) == {waiting.id}


def test_an_insertion_before_the_saved_position_falls_back_to_every_page(demo, service_calls, tasks_sent):
    history(demo, 200)
    run(service_calls)
    first_pass = state().full_pass_at
    assert run(service_calls) == (0, 1)

    # A transaction appears in the middle of the list (not at its end): the items before the saved
    # position move, the marker no longer matches, and only a full pass can find it.
    hidden = new_order(demo)
    middle = Transaction.objects.order_by("created_at", "id").values_list("created_at", flat=True)[50]
    Transaction.objects.filter(pk=hidden.id).update(created_at=middle - timedelta(microseconds=1))

    assert run(service_calls) == (1, 1 + math.ceil(201 / PAGE_SIZE))  # the cheap try, then every page
    assert Order.objects.filter(transaction_id=hidden.id).exists()
    assert state().full_pass_at > first_pass
    assert run(service_calls) == (0, 1)  # positions trusted again


def test_a_removal_before_the_saved_position_falls_back_to_every_page(demo, service_calls, tasks_sent):
    history(demo, 200)
    run(service_calls)
    Transaction.objects.filter(pk=Transaction.objects.order_by("created_at", "id")[10].pk).delete()
    lost = new_order(demo)  # the total is as before: only the marker tells

    assert run(service_calls) == (1, 1 + math.ceil(200 / PAGE_SIZE))
    assert Order.objects.filter(transaction_id=lost.id).exists()


def test_the_full_pass_runs_when_due(demo, service_calls, tasks_sent, settings):
    settings.RECONCILE_FULL_INTERVAL = 3600
    history(demo, 200)
    full = math.ceil(200 / PAGE_SIZE)
    assert run(service_calls) == (0, full)
    ReconciliationState.objects.filter(name=STATE_NAME).update(full_pass_at=timezone.now() - timedelta(minutes=59))
    assert run(service_calls) == (0, 1)

    ReconciliationState.objects.filter(name=STATE_NAME).update(full_pass_at=timezone.now() - timedelta(minutes=61))
    assert run(service_calls) == (0, 1 + full)  # that run's cheap pass, then every page
    assert state().full_pass_at > timezone.now() - timedelta(minutes=1)
    assert run(service_calls) == (0, 1)

    settings.RECONCILE_FULL_INTERVAL = 0  # every run reads every page
    assert run(service_calls) == (0, 1 + full)


def test_the_task_reads_every_page_when_asked(demo, service_calls, tasks_sent):
    from partner.fulfillment.tasks import reconcile

    history(demo, 120)
    run(service_calls)
    service_calls.clear()
    reconcile.apply(kwargs={"full": True}).get()
    assert list_calls(service_calls) == math.ceil(120 / PAGE_SIZE)
    service_calls.clear()
    reconcile.apply().get()
    assert list_calls(service_calls) == 1


def test_the_marker_is_the_items_just_before_the_saved_position(demo, service_calls, tasks_sent):
    history(demo, 30)
    run(service_calls)
    ids = list(Transaction.objects.order_by("created_at", "id").values_list("id", flat=True))
    assert state().position == 30 and state().marker == ids[-MARKER_SIZE:]


def test_a_failing_full_pass_is_due_again_and_never_keeps_the_cheap_pass_from_new_orders(
    demo, service_calls, tasks_sent, monkeypatch
):
    from partner.fulfillment.recovery import reconciliation

    history(demo, 120)
    run(service_calls)
    long_ago = timezone.now() - timedelta(days=2)
    ReconciliationState.objects.filter(name=STATE_NAME).update(full_pass_at=long_ago)

    def every_page_fails():
        yield from ()
        raise ServiceUnavailableError("no answer", method="GET", url="http://svc/partner/v2/transactions")

    monkeypatch.setattr(reconciliation.client, "iter_transactions", every_page_fails)
    lost = new_order(demo)
    with pytest.raises(ServiceUnavailableError):
        transactions_reconcile()
    assert Order.objects.filter(transaction_id=lost.id).exists()  # the cheap pass came first
    assert state().full_pass_at == long_ago  # not put off for a day by a failure: due at the next run
    assert state().position == 121


@pytest.mark.django_db
def test_a_first_full_pass_that_fails_leaves_no_position(monkeypatch):
    from partner.fulfillment.recovery import reconciliation

    def every_page_fails():
        yield from ()
        raise ServiceUnavailableError("no answer", method="GET", url="http://svc/partner/v2/transactions")

    monkeypatch.setattr(reconciliation.client, "iter_transactions", every_page_fails)
    with pytest.raises(ServiceUnavailableError):
        transactions_reconcile()
    assert state().full_pass_at is None

    monkeypatch.setattr(reconciliation.client, "iter_transactions", lambda: iter([]))
    assert transactions_reconcile() == 0
    assert state().full_pass_at is not None and state().position == 0


@pytest.mark.django_db
def test_only_the_newest_unfinished_orders_are_watched(monkeypatch):
    from partner.fulfillment.recovery import reconciliation

    for transaction_id in ("t-old", "t-new", "t-newer"):
        delivered_long_ago(transaction_id)
    Order.objects.create(transaction_id="t-done", status=OrderStatus.REQUEST_COMPLETED)
    monkeypatch.setattr(reconciliation, "WATCH_LIMIT", 2)
    watched = {"t-old": 3, "t-new": 7, "t-newer": 9, "t-done": 8, "t-unknown": 10}
    assert reconciliation._watched_kept(watched) == {"t-new": 7, "t-newer": 9}
