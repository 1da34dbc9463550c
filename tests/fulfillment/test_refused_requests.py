"""A request we refuse to send (RequestRefused: no ServiceError, no status) ends the work as a call
the service refused does: the order fails for good, the delivery fails with its reason, the
notification fails; nothing is retried and nothing is counted as an unexpected error."""

import pytest
from django.conf import settings
from django.utils import timezone

from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, FailureCode, Order, OrderStatus
from partner.fulfillment.runs import order_run
from partner.inbox.dispatch import notification_process
from partner.inbox.models import Notification, NotificationState
from partner.platform import client
from partner.platform.formats import WEBHOOK_EVENT_CREATED
from partner.platform.urns import event_resource_type

pytestmark = pytest.mark.django_db

REFUSED = "not an id that may be placed in a service path: 'x'"


def test_an_order_whose_read_is_refused_fails_for_good(fake_platform):
    fake_platform.fail("get_transaction", client.ServicePathIdError(REFUSED))
    order = Order.objects.create(transaction_id="txn-refused-1")

    outcome = order_run(order_id=order.pk)

    assert outcome.retry is None
    order.refresh_from_db()
    assert (order.status, order.failure_code) == (OrderStatus.FAILED, FailureCode.SERVICE_REJECTED)
    assert order.failure_reason == f"The request was not sent: {REFUSED}"
    assert order.last_error == REFUSED
    assert fake_platform.names() == ["get_transaction"]


def test_a_delivery_whose_patch_is_refused_fails_with_its_reason(fake_platform):
    fake_platform.fail("patch_response", client.ServicePathIdError(REFUSED))
    now = timezone.now()
    order = Order.objects.create(
        transaction_id="txn-refused-2", status=OrderStatus.IN_PROGRESS, prepared_at=now, response={"x": 1}
    )
    delivery = Delivery.objects.create(order=order, kind=DeliveryKind.RESULT, state=DeliveryState.PENDING)

    outcome = order_run(order_id=order.pk)

    assert outcome.retry is None
    delivery.refresh_from_db()
    assert (delivery.state, delivery.failure_reason) == (DeliveryState.FAILED, f"The request was not sent: {REFUSED}")
    assert delivery.last_error == REFUSED
    order.refresh_from_db()
    assert (order.status, order.failure_code) == (OrderStatus.FAILED, FailureCode.SERVICE_REJECTED)
    assert fake_platform.names() == ["patch_response"]


def test_a_notification_whose_call_is_refused_fails(fake_platform):
    fake_platform.fail("get_event", client.ServicePathIdError(REFUSED))
    notification = Notification.objects.create(
        dedupe_key="id:evt-refused-1",
        resource_type=event_resource_type(),
        resource_id="evt-1",
        event_type=WEBHOOK_EVENT_CREATED,
        resource_ref=f"{settings.SVC_BASE_URL}/partner/v2/transactions/txn-1/events/evt-1",
        body="{}",
    )

    assert notification_process(notification_id=notification.pk) == NotificationState.FAILED
    notification.refresh_from_db()
    assert (notification.state, notification.last_error) == (NotificationState.FAILED, REFUSED)
