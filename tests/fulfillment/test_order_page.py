"""An order's page in the admin: the outcome and its reason on top with its button, the request and the
findings as tables, and no way to delete an order (the audit trail)."""

import pytest
from django.urls import reverse

from partner.fulfillment.models import FailureCode, Order, OrderStatus

pytestmark = pytest.mark.django_db

REQUEST = {
    "type": "NEW_REQUEST",
    "loan": {"loanNumber": "LN-77", "property": {"postalCode": "94105", "propertyUsageType": "PrimaryResidence"}},
}
FINDINGS = [
    {"field": "city", "label": "City", "before": "San Fran", "after": "San Francisco", "changed": True},
    {"field": "postalCode", "label": "ZIP code", "before": "94105", "after": "94105", "changed": False},
]


def page_of(client, order) -> str:
    return client.get(reverse("admin:fulfillment_order_change", args=[order.pk])).content.decode()


def failed_order() -> Order:
    return Order.objects.create(
        transaction_id="txn-failed-page",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason="Gave up after retries: the service answered 503 six times.",
        request=REQUEST,
        findings=FINDINGS,
    )


def test_a_failed_orders_page_starts_with_its_outcome_reason_and_retry(staff, tasks_sent):
    order = failed_order()
    page = page_of(staff, order)
    outcome = page.split('id="order-outcome"')[1]
    assert page.index('id="order-outcome"') < page.index("<fieldset")  # on top, before every field
    assert "Failed" in outcome.split("</h2>")[0]
    assert "Gave up after retries: the service answered 503 six times." in outcome.split("</div>")[0]
    assert reverse("admin:fulfillment_order_retry_one", args=[order.pk]) in outcome.split("</div>")[0]

    done = staff.post(reverse("admin:fulfillment_order_retry_one", args=[order.pk]), follow=True)
    assert "The order is back at work" in done.content.decode()
    order.refresh_from_db()
    assert order.status == OrderStatus.VALIDATION_REQUESTED


def test_a_delivered_orders_page_offers_confirm_on_top(staff):
    order = Order.objects.create(transaction_id="txn-delivered-page", status=OrderStatus.RESPONSE_DELIVERED)
    outcome = page_of(staff, order).split('id="order-outcome"')[1].split("</div>")[0]
    assert "waiting for the platform to confirm" in outcome
    staff.post(reverse("admin:fulfillment_order_confirm_one", args=[order.pk]))
    order.refresh_from_db()
    assert order.status == OrderStatus.REQUEST_COMPLETED


def test_the_request_and_findings_are_tables_in_staff_words_not_json(staff):
    page = page_of(staff, failed_order())
    assert '<tr><th scope="row">Loan: Subject property: ZIP code</th><td>94105</td></tr>' in page
    assert '<tr><th scope="row">Loan: Subject property: Property usage</th><td>Primary residence</td></tr>' in page
    assert '<th scope="row">City</th><td>San Fran</td><td>San Francisco</td><td>yes</td>' in page
    assert '"propertyUsageType"' not in page and "&quot;loanNumber&quot;" not in page


def test_view_only_staff_see_no_retry_button(client, django_user_model):
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("viewer", "v@partner.example", "pw-viewer-123", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_order"))
    client.force_login(viewer)
    order = failed_order()
    assert "Retry the order" not in page_of(client, order)
    assert client.post(reverse("admin:fulfillment_order_retry_one", args=[order.pk])).status_code == 403
    order.refresh_from_db()
    assert order.status == OrderStatus.FAILED


def test_orders_cannot_be_deleted_from_the_admin(staff):
    order = failed_order()
    assert "deletelink" not in page_of(staff, order)
    assert staff.get(reverse("admin:fulfillment_order_delete", args=[order.pk])).status_code == 403
    listing = staff.get(reverse("admin:fulfillment_order_changelist")).content.decode()
    assert 'value="delete_selected"' not in listing
    assert Order.objects.filter(pk=order.pk).exists()
