"""The order's and the delivery's tables of moves: what they allow, what they refuse, and that every
status write goes through them."""

import ast
import pathlib

import pytest

from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus
from partner.fulfillment.orders.states import (
    DELIVERY_MOVES,
    ORDER_MOVES,
    MoveNotAllowed,
    delivery_move,
    delivery_move_check,
    order_move,
    order_move_check,
    order_move_where_allowed,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_state_of_the_order_and_of_the_delivery_has_its_row_in_the_table():
    assert set(ORDER_MOVES) == set(OrderStatus.values)
    assert set(DELIVERY_MOVES) == set(DeliveryState.values)
    assert all(source in OrderStatus.values for sources in ORDER_MOVES.values() for source in sources)


@pytest.mark.parametrize(
    "current, to",
    [
        (OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED),  # a completed order stays completed
        (OrderStatus.DECLINED, OrderStatus.REQUEST_COMPLETED),
        (OrderStatus.RESPONSE_DELIVERED, OrderStatus.WITH_STAFF),
        (OrderStatus.IN_PROGRESS, OrderStatus.DECLINED),  # only an order with staff is declined
        (OrderStatus.REQUEST_COMPLETED, OrderStatus.IN_PROGRESS),  # a retry is of a failed order only
    ],
)
def test_a_move_the_table_does_not_allow_is_refused_with_both_states_named(current, to):
    with pytest.raises(MoveNotAllowed, match=f"an order cannot move from {current} to {to}"):
        order_move_check(current, to)


def test_a_confirmed_delivery_moves_no_more():
    for to in (DeliveryState.PENDING, DeliveryState.SENT, DeliveryState.FAILED):
        with pytest.raises(MoveNotAllowed, match=f"a delivery cannot move from confirmed to {to}"):
            delivery_move_check(DeliveryState.CONFIRMED, to)


@pytest.mark.django_db
def test_a_move_changes_only_the_rows_whose_state_allows_it():
    failed = Order.objects.create(transaction_id="t-failed", status=OrderStatus.FAILED)
    completed = Order.objects.create(transaction_id="t-completed", status=OrderStatus.REQUEST_COMPLETED)
    rows = Order.objects.filter(pk__in=[failed.pk, completed.pk])

    assert order_move(rows, OrderStatus.IN_PROGRESS, last_error="retried") == 1
    assert Order.objects.get(pk=failed.pk).status == OrderStatus.IN_PROGRESS
    completed.refresh_from_db()
    assert (completed.status, completed.last_error) == (OrderStatus.REQUEST_COMPLETED, "")  # untouched


@pytest.mark.django_db
def test_a_record_made_whatever_came_first_keeps_a_status_the_table_does_not_let_move():
    """The delivery recorded after the service's callback completed the order: its time is written,
    the order stays completed."""
    completed = Order.objects.create(transaction_id="t-completed-first", status=OrderStatus.REQUEST_COMPLETED)
    working = Order.objects.create(transaction_id="t-working", status=OrderStatus.IN_PROGRESS)
    rows = Order.objects.filter(pk__in=[completed.pk, working.pk])

    order_move_where_allowed(rows, OrderStatus.RESPONSE_DELIVERED, resource_id="res-1")

    assert dict(rows.values_list("transaction_id", "status")) == {
        "t-completed-first": OrderStatus.REQUEST_COMPLETED,
        "t-working": OrderStatus.RESPONSE_DELIVERED,
    }
    assert set(rows.values_list("resource_id", flat=True)) == {"res-1"}


@pytest.mark.django_db
def test_a_delivery_sent_again_must_have_failed_first():
    order = Order.objects.create(transaction_id="t-delivery", status=OrderStatus.WITH_STAFF)
    sent = Delivery.objects.create(order=order, kind=DeliveryKind.STATUS_UPDATE, state=DeliveryState.SENT)
    failed = Delivery.objects.create(order=order, kind=DeliveryKind.STATUS_UPDATE, state=DeliveryState.FAILED)

    assert delivery_move(Delivery.objects.filter(order=order), DeliveryState.PENDING) == 1
    assert dict(Delivery.objects.values_list("pk", "state")) == {
        sent.pk: DeliveryState.SENT,
        failed.pk: DeliveryState.PENDING,
    }


def _status_writes(path: pathlib.Path) -> list[str]:
    """The calls in `path` that write an order's status or a delivery's state to the database:
    `.update(status=…)`, `update_returning(…, state=…)`, `.create(…)` is an INSERT, not a move."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in {"update", "update_returning", "bulk_update"} and any(
            keyword.arg in {"status", "state"} for keyword in node.keywords
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if name == "save" and any(
            keyword.arg == "update_fields"
            and isinstance(keyword.value, ast.List | ast.Tuple)
            and any(getattr(element, "value", None) in {"status", "state"} for element in keyword.value.elts)
            for keyword in node.keywords
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_status_write_of_the_order_domain_is_in_the_module_of_its_table():
    package = ROOT / "partner" / "fulfillment"
    writes = [
        write
        for path in sorted(package.rglob("*.py"))
        if "migrations" not in path.parts and path.name != "states.py"
        for write in _status_writes(path)
    ]
    assert writes == []
    assert _status_writes(package / "orders" / "states.py")  # the check sees the writes it looks for
