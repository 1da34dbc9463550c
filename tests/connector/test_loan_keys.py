"""Keys no form describes inside an entitled loan field are refused, never sent to the service
(issue 36, low): a delivery's loan field is held to its form's properties, as the products API
documents it (`additionalProperties: false`)."""

import pytest

from partner.catalog.models import Product
from partner.connector import answers
from partner.connector.selectors import delivery_loan_schema
from partner.core.errors import ApplicationError
from partner.fulfillment.models import Delivery, DeliveryKind

pytestmark = pytest.mark.django_db

APPRAISAL = {"appraisedValue": 812000, "effectiveDate": "2026-11-20", "condition": "C3"}


@pytest.mark.parametrize(
    "loan",
    [
        pytest.param({"appraisal": {**APPRAISAL, "borrowerSsn": "123-45-6789"}}, id="appraisal"),
        pytest.param({"appraisal": APPRAISAL, "property": {"city": "Portland", "ownerNotes": "x"}}, id="property"),
    ],
)
def test_a_key_its_form_does_not_describe_is_refused(order, connection, tasks_sent, loan):
    with pytest.raises(ApplicationError) as refused:
        answers.delivery_request(connection=connection, order_id=order.pk, final=True, loan=loan)
    assert "does not describe" in refused.value.message
    assert "borrowerSsn" in refused.value.message or "ownerNotes" in refused.value.message
    assert not Delivery.objects.filter(order=order, kind=DeliveryKind.FINAL).exists()

    delivered = answers.delivery_request(
        connection=connection, order_id=order.pk, final=True, loan={"appraisal": APPRAISAL}
    )
    assert delivered.loan == {"appraisal": APPRAISAL}


def test_the_products_api_documents_each_field_closed(connected_product):
    schema = delivery_loan_schema(Product.objects.get(pk=connected_product.pk), request_type="NEW_REQUEST")
    assert schema["properties"]["appraisal"]["additionalProperties"] is False
    assert schema["properties"]["property"]["additionalProperties"] is False
