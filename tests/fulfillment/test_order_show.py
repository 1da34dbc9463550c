"""`manage.py order_show`: each order's status, failure code and deliveries, one JSON line per order."""

import io
import json

import pytest
from django.core.management import call_command

from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderStatus

pytestmark = pytest.mark.django_db


def test_order_show_prints_each_orders_deliveries_in_the_order_made():
    order = Order.objects.create(transaction_id="txn-shown", status=OrderStatus.RESPONSE_DELIVERED)
    Delivery.objects.create(order=order, kind=DeliveryKind.ACKNOWLEDGEMENT, state=DeliveryState.CONFIRMED, sequence=1)
    Delivery.objects.create(order=order, kind=DeliveryKind.FINAL, state=DeliveryState.SENT, sequence=2)
    Order.objects.create(transaction_id="txn-failed", status=OrderStatus.FAILED, failure_code="order_refused")
    Order.objects.create(transaction_id="txn-other", status=OrderStatus.IN_PROGRESS)
    out = io.StringIO()
    call_command("order_show", "txn-shown", "txn-failed", "txn-unknown", stdout=out)
    shown = {line["transaction_id"]: line for line in map(json.loads, out.getvalue().splitlines())}
    assert shown == {
        "txn-shown": {
            "transaction_id": "txn-shown",
            "id": order.pk,
            "status": "RESPONSE_DELIVERED",
            "failure_code": "",
            "deliveries": [
                {"kind": "acknowledgement", "state": "confirmed", "sequence": 1},
                {"kind": "final", "state": "sent", "sequence": 2},
            ],
        },
        "txn-failed": {
            "transaction_id": "txn-failed",
            "id": shown["txn-failed"]["id"],
            "status": "FAILED",
            "failure_code": "order_refused",
            "deliveries": [],
        },
    }
