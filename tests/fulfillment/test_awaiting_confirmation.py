"""A lost "processed" callback: the delivered order is shown as awaiting confirmation, completed when
the service's transaction list says so, or confirmed by staff."""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.orders.selectors import orders_awaiting_confirmation
from partner.fulfillment.recovery import reconciliation
from partner.platform.types import Transaction

pytestmark = pytest.mark.django_db


def delivered(transaction_id: str, *, minutes_ago: float) -> Order:
    return Order.objects.create(
        transaction_id=transaction_id,
        status=OrderStatus.RESPONSE_DELIVERED,
        delivered_at=timezone.now() - timedelta(minutes=minutes_ago),
    )


def test_a_delivered_order_awaits_confirmation_only_after_the_wait(settings):
    settings.CONFIRMATION_WAIT_SECONDS = 600
    late = delivered("t-late", minutes_ago=20)
    delivered("t-recent", minutes_ago=2)
    Order.objects.create(transaction_id="t-done", status=OrderStatus.REQUEST_COMPLETED)
    assert list(orders_awaiting_confirmation()) == [late]

    health = Client().get("/healthz")
    assert health.status_code == 200 and health.json()["status"] == "degraded"
    assert "1 delivered order(s) await the service's confirmation" in health.json()["warnings"][0]


def test_the_reconciliation_completes_what_the_list_says_is_completed(settings, monkeypatch):
    settings.CONFIRMATION_WAIT_SECONDS = 600
    done = delivered("t-done-there", minutes_ago=20)
    still = delivered("t-processing-there", minutes_ago=20)
    listing = [
        Transaction.from_json({"id": "t-done-there", "status": "completed"}),
        Transaction.from_json({"id": "t-processing-there", "status": "processing"}),
    ]
    monkeypatch.setattr(reconciliation.client, "iter_transactions", lambda: iter(listing))

    assert reconciliation.transactions_reconcile() == 0  # nothing unknown to open

    done.refresh_from_db()
    still.refresh_from_db()
    assert done.status == OrderStatus.REQUEST_COMPLETED and done.completed_at is not None
    assert done.steps.get(name="completed").detail == "the service's transaction list says completed"
    assert still.status == OrderStatus.RESPONSE_DELIVERED


def test_staff_find_them_and_confirm_by_hand(settings, staff):
    settings.CONFIRMATION_WAIT_SECONDS = 600
    late = delivered("t-lost-callback", minutes_ago=30)
    delivered("t-just-sent", minutes_ago=1)
    url = reverse("admin:fulfillment_order_changelist")

    page = staff.get(url, {"confirmation": "awaiting"}).content.decode()
    assert "t-lost-callback" in page and "t-just-sent" not in page

    response = staff.post(url, {"action": "confirm", "_selected_action": [late.pk]}, follow=True)
    assert "1 order(s) confirmed as completed" in response.content.decode()
    late.refresh_from_db()
    assert late.status == OrderStatus.REQUEST_COMPLETED
    assert late.steps.get(name="completed").detail == "confirmed by staff"
