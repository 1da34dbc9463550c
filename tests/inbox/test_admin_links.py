"""The admin links a notification to its order and an order to its notifications, and shows times to the second."""

import pytest
from django.conf import settings
from django.urls import reverse

from partner.catalog.models import Product
from partner.fulfillment.models import Order, OrderStatus
from partner.inbox.models import Notification, NotificationState

pytestmark = pytest.mark.django_db

TXN = "txn-links-1"


@pytest.fixture
def order_and_notifications():
    order = Order.objects.create(transaction_id=TXN, status=OrderStatus.REQUEST_COMPLETED)
    base = f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}"
    created = Notification.objects.create(
        dedupe_key="n1", resource_type="urn:svc:platform:transaction", resource_id=TXN, event_type="created",
        resource_ref=base, body="{}", state=NotificationState.PROCESSED,
    )  # fmt: skip
    callback = Notification.objects.create(
        dedupe_key="n2", resource_type="urn:svc:platform:transaction:event", resource_id="ev-9",
        event_type="created", resource_ref=f"{base}/events/ev-9", body="{}", state=NotificationState.PROCESSED,
    )  # fmt: skip
    Notification.objects.create(
        dedupe_key="n3", resource_type="urn:svc:platform:transaction", resource_id="other", event_type="created",
        body="{}", state=NotificationState.PROCESSED,
    )  # fmt: skip
    return order, created, callback


def test_a_notification_links_to_its_order_the_callbacks_too(staff, order_and_notifications):
    order, created, callback = order_and_notifications
    order_url = reverse("admin:fulfillment_order_change", args=[order.pk])
    for notification in (created, callback):
        page = staff.get(reverse("admin:inbox_notification_change", args=[notification.pk])).content.decode()
        assert f'href="{order_url}"' in page


def test_an_order_links_to_its_notifications_and_they_are_found(staff, order_and_notifications):
    order, created, callback = order_and_notifications
    page = staff.get(reverse("admin:fulfillment_order_change", args=[order.pk])).content.decode()
    listing = reverse("admin:inbox_notification_changelist") + f"?q={TXN}"
    assert f'href="{listing}"' in page
    found = staff.get(listing).context["cl"].result_list
    assert {n.pk for n in found} == {created.pk, callback.pk}


def test_times_are_shown_to_the_second(staff, order_and_notifications):
    order, _, _ = order_and_notifications
    page = staff.get(reverse("admin:fulfillment_order_change", args=[order.pk])).content.decode()
    assert order.created_at.strftime("%H:%M:%S") in page


def test_a_product_without_its_own_secret_says_which_secrets_apply(staff, settings):
    from tests.helpers.products import product_create

    product = product_create(credentials=False)
    settings.SVC_SIGNING_SECRETS = ["deployment-secret"]
    page = staff.get(reverse("admin:catalog_product_change", args=[product.pk])).content.decode()
    assert "its webhooks verify with the deployment&#x27;s SVC_SIGNING_SECRETS" in page
    settings.SVC_SIGNING_SECRETS = []
    page = staff.get(reverse("admin:catalog_product_change", args=[product.pk])).content.decode()
    assert "no secret verifies its webhooks" in page
    assert Product.objects.count() == 1
