"""A notification is not trusted beyond what the service's transaction record confirms.

- A forged or broken notification that arrived first (a resourceRef off the service) must not
  doom the order: the genuine notification reopens it.
- The product of an order is the one the transaction record names, whatever the notification said.
"""

import pytest
from django.conf import settings

from partner.fulfillment.models import FailureCode, OrderStatus
from partner.fulfillment.orders.services import order_open
from partner.platform.formats import DISCLOSURE_ACTION, DISCLOSURE_FORMAT
from tests.helpers.orders import order_ran
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db

TXN = "txn-trust-1"
LOAN = {"property": {"city": "San Francisco", "state": "CA", "postalCode": "94105", "county": "San Francisco"}}


def genuine_ref() -> str:
    return f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}"


def test_a_forged_first_notification_does_not_doom_the_genuine_one(fake_platform):
    product_create()
    fake_platform.transaction_add(
        TXN,
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    forged, _, _ = order_open(
        transaction_id=TXN, resource_ref="http://169.254.169.254/latest/meta-data", product_name="address-verification"
    )
    failed = order_ran(order_id=forged.pk)
    assert (failed.status, failed.failure_code) == (OrderStatus.FAILED, FailureCode.RESOURCE_OUTSIDE_SERVICE)
    assert fake_platform.names() == []  # nothing was read from the forged address

    genuine, created, _ = order_open(
        transaction_id=TXN, resource_ref=genuine_ref(), product_name="address-verification"
    )
    assert not created and genuine.pk == forged.pk
    done = order_ran(order_id=genuine.pk)
    assert done.status == OrderStatus.RESPONSE_DELIVERED
    assert "reopened" in set(done.steps.values_list("name", flat=True))


def test_a_failure_of_the_order_itself_is_not_reopened_by_a_notification(fake_platform):
    product_create()
    fake_platform.transaction_add(TXN, request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": {}})
    order, _, _ = order_open(transaction_id=TXN, resource_ref=genuine_ref(), product_name="address-verification")
    assert order_ran(order_id=order.pk).failure_code == FailureCode.CREDENTIALS_INVALID

    again, _, _ = order_open(transaction_id=TXN, resource_ref=genuine_ref() + "?again", product_name="x")
    again.refresh_from_db()
    assert again.status == OrderStatus.FAILED


def test_the_transaction_record_names_the_product_not_the_notification(fake_platform):
    product_create()  # address verification: a PDF report
    entitled = [
        {
            "requestTypes": ["NEW_REQUEST"],
            "response": {"results": [{"action": DISCLOSURE_ACTION, "formats": [DISCLOSURE_FORMAT]}]},
        }
    ]
    product_create(
        name="disclosure-delivery",
        fulfiller="disclosure_status",
        credentials=False,
        raw={"name": "disclosure-delivery", "entitlements": {"data": {"transaction": entitled}}},
    )
    # The service's record: a documents-delivery transaction. The notification claims the address product.
    fake_platform.transaction_add(
        TXN, request={"type": "NEW_REQUEST", "loan": LOAN}, product_name="disclosure-delivery"
    )
    order, _, _ = order_open(transaction_id=TXN, resource_ref=genuine_ref(), product_name="address-verification")

    done = order_ran(order_id=order.pk)

    assert done.product_name == "disclosure-delivery"
    assert "upload_resource" not in fake_platform.names()  # no address report went out
    [(_, payload)] = fake_platform.called("patch_response")
    assert payload["result"]["action"] == DISCLOSURE_ACTION
    assert "product_mismatch" in set(done.steps.values_list("name", flat=True))
