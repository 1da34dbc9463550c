"""The periodic product pull: entitlement changes made on the service reach our copy."""

import pytest

from partner.catalog.models import Product
from partner.catalog.tasks import pull
from partner.sandbox import services as sandbox

pytestmark = pytest.mark.django_db(transaction=True)


def test_periodic_pull_brings_service_changes(service):
    seed = sandbox.sandbox_seed(public_base_url=service.url)
    assert "2 created" in pull.apply().get()
    product = seed.products["address-verification"]
    sandbox.product_merge(product_id=product.service_id, patch={"listingName": "Address check (renamed)"})
    assert "2 updated" in pull.apply().get()
    assert Product.objects.get(name="address-verification").listing_name == "Address check (renamed)"
