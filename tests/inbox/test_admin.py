"""The inbox in the admin: list, filters, the raw body, replay (the orders: tests/fulfillment/test_admin.py)."""

import json

import pytest
from django.urls import reverse

from partner.inbox.models import Notification, NotificationState


def notification(**kwargs):
    body = json.dumps({"eventType": "created", "meta": {"resourceId": "txn-admin"}, "note": "<script>x</script>"})
    defaults = {
        "dedupe_key": "k1",
        "resource_type": "urn:svc:platform:transaction",
        "resource_id": "txn-admin",
        "event_type": "created",
        "body": body,
        "headers": {"User-Agent": "svc"},
        "state": NotificationState.FAILED,
        "last_error": "boom",
    }
    return Notification.objects.create(**{**defaults, **kwargs})


@pytest.mark.django_db
def test_inbox_list_filter_and_search(staff):
    notification()
    url = reverse("admin:inbox_notification_changelist")
    assert "txn-admin" in staff.get(url, {"state__exact": "failed"}).content.decode()
    assert "txn-admin" not in staff.get(url, {"state__exact": "processed"}).content.decode()
    assert "txn-admin" in staff.get(url, {"q": "txn-admin"}).content.decode()


@pytest.mark.django_db
def test_raw_body_is_shown_escaped(staff):
    stored = notification()
    page = staff.get(reverse("admin:inbox_notification_change", args=[stored.pk])).content.decode()
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>x</script>" not in page


@pytest.mark.django_db(transaction=True)
def test_replay_action_enqueues_again(staff):
    stored = notification()
    response = staff.post(
        reverse("admin:inbox_notification_changelist"),
        {"action": "replay", "_selected_action": [stored.pk]},
        follow=True,
    )
    assert "1 of 1 notification(s) enqueued again" in response.content.decode()
    stored.refresh_from_db()
    assert stored.state == NotificationState.RECEIVED  # the relay hands it to the broker


@pytest.mark.django_db
def test_notifications_cannot_be_deleted_from_the_admin(staff):
    """The inbox is the audit trail: no Delete button, no delete page, no bulk delete (retention removes)."""
    stored = notification()
    page = staff.get(reverse("admin:inbox_notification_change", args=[stored.pk])).content.decode()
    assert "deletelink" not in page
    assert staff.get(reverse("admin:inbox_notification_delete", args=[stored.pk])).status_code == 403
    listing = staff.get(reverse("admin:inbox_notification_changelist")).content.decode()
    assert 'value="delete_selected"' not in listing
    assert Notification.objects.filter(pk=stored.pk).exists()
