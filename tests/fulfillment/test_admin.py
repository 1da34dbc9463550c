"""The orders in the admin: list, filter, the failure reason, and the retry action."""

import pytest
from django.urls import reverse

from partner.fulfillment.enqueue import ORDER_RUN_TASK
from partner.fulfillment.models import FailureCode, Order, OrderStatus

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:fulfillment_order_changelist"


def failed_order(transaction_id="txn-failed") -> Order:
    return Order.objects.create(
        transaction_id=transaction_id,
        status=OrderStatus.FAILED,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason="Gave up after retries: 503",
    )


def test_order_list_and_retry_of_a_failed_order(staff):
    failed = failed_order()
    done = Order.objects.create(transaction_id="txn-done", status=OrderStatus.REQUEST_COMPLETED)
    url = reverse(CHANGELIST)
    page = staff.get(url, {"status__exact": "FAILED"}).content.decode()
    assert "txn-failed" in page and "txn-done" not in page
    assert (
        "Gave up after retries"
        in staff.get(reverse("admin:fulfillment_order_change", args=[failed.pk])).content.decode()
    )

    response = staff.post(url, {"action": "retry", "_selected_action": [failed.pk, done.pk]}, follow=True)
    text = response.content.decode()
    assert "1 order(s) sent back to work" in text
    assert "1 order(s) were not failed" in text
    failed.refresh_from_db()
    done.refresh_from_db()
    assert failed.status == OrderStatus.VALIDATION_REQUESTED and failed.failure_reason == ""
    assert done.status == OrderStatus.REQUEST_COMPLETED


def test_retry_hands_the_failed_order_to_a_worker_after_commit(staff, tasks_sent, django_capture_on_commit_callbacks):
    failed = failed_order()
    done = Order.objects.create(transaction_id="txn-done", status=OrderStatus.REQUEST_COMPLETED)

    with django_capture_on_commit_callbacks() as callbacks:
        staff.post(reverse(CHANGELIST), {"action": "retry", "_selected_action": [failed.pk, done.pk]})
    assert tasks_sent == []  # nothing is published before the retry is committed

    for callback in callbacks:
        callback()
    assert tasks_sent == [(ORDER_RUN_TASK, {"order_id": failed.pk})]  # the failed one only


@pytest.fixture
def viewer(client, django_user_model):
    """A staff member who may look at orders and notifications, not put them back to work."""
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("viewer", "viewer@partner.example", "viewer-password-1")
    user.is_staff = True
    user.save()
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_order", "view_notification"]),
    )
    client.force_login(user)
    return client


def test_view_only_staff_can_neither_retry_nor_replay(viewer, tasks_sent):
    from partner.inbox.models import Notification, NotificationState

    failed = failed_order("txn-viewer")
    notification = Notification.objects.create(
        dedupe_key="id:viewer",
        resource_type="urn:svc:platform:transaction",
        resource_id="t",
        event_type="created",
        body="{}",
        state=NotificationState.FAILED,
    )
    order_page = viewer.get(reverse(CHANGELIST)).content.decode()
    inbox_url = reverse("admin:inbox_notification_changelist")
    assert "txn-viewer" in order_page and 'value="retry"' not in order_page
    assert 'value="replay"' not in viewer.get(inbox_url).content.decode()

    viewer.post(reverse(CHANGELIST), {"action": "retry", "_selected_action": [failed.pk]})
    viewer.post(inbox_url, {"action": "replay", "_selected_action": [notification.pk]})

    failed.refresh_from_db()
    notification.refresh_from_db()
    assert failed.status == OrderStatus.FAILED
    assert notification.state == NotificationState.FAILED
    assert tasks_sent == []


def test_staff_with_the_change_permission_may_retry(viewer, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.get(username="viewer")
    user.user_permissions.add(Permission.objects.get(codename="change_order"))
    failed = failed_order("txn-changer")
    assert 'value="retry"' in viewer.get(reverse(CHANGELIST)).content.decode()
    viewer.post(reverse(CHANGELIST), {"action": "retry", "_selected_action": [failed.pk]})
    failed.refresh_from_db()
    assert failed.status == OrderStatus.VALIDATION_REQUESTED
