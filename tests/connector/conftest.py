"""A connected product and its connection, for the connector's tests."""

import pytest

from partner.catalog.fulfiller_keys import CONNECTED
from partner.connector.services import connection_create
from tests.helpers.connector import APPRAISAL_ENTITLEMENTS, TXN, connected_order
from tests.helpers.products import product_create


@pytest.fixture
def connected_product(settings):
    settings.PUBLIC_BASE_URL = "https://partner.example"
    return product_create(
        name="appraisal",
        fulfiller=CONNECTED,
        turnaround_hours=48,
        raw={"name": "appraisal", "entitlements": APPRAISAL_ENTITLEMENTS},
    )


@pytest.fixture
def connection(connected_product):
    created = connection_create(
        name="acme-amc",
        endpoint_url="http://127.0.0.1:9/hooks",
        products=[connected_product],
        notify_email="ops@x.example",
    )
    created.connection.created = created
    return created.connection


@pytest.fixture
def order(fake_platform, connection, connected_product):
    return connected_order(fake_platform, transaction_id=TXN, product_name=connected_product.name)
