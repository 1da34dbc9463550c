"""Which fulfiller works a product, set by the catalog's one rule (`services.product_fulfiller_set`):
a registered key only, the cached catalog dropped so the next order reads the new one."""

import pytest

from partner.catalog.errors import ProductNotFound
from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.catalog.product_cache import catalog_product
from partner.catalog.services import product_fulfiller_set
from partner.core.errors import ApplicationError
from tests.helpers.products import product_create

pytestmark = pytest.mark.django_db


def test_the_fulfiller_is_set_and_the_next_order_reads_it_from_the_cached_catalog():
    product_create(name="appraisal", fulfiller="staff_worked", credentials=False)
    assert catalog_product(service_id=None, name="appraisal").fulfiller == "staff_worked"  # cached now

    product = product_fulfiller_set(name="appraisal", fulfiller=CONNECTED)

    assert product.fulfiller == CONNECTED == Product.objects.get(name="appraisal").fulfiller
    assert catalog_product(service_id=None, name="appraisal").fulfiller == CONNECTED


@pytest.mark.parametrize("key", ["no-such-fulfiller", "", None])
def test_a_key_no_fulfiller_registered_is_refused_and_nothing_changes(key):
    product_create(name="appraisal", fulfiller="staff_worked", credentials=False)
    with pytest.raises(ApplicationError, match="No fulfiller has the key"):
        product_fulfiller_set(name="appraisal", fulfiller=key)
    assert Product.objects.get(name="appraisal").fulfiller == "staff_worked"


def test_a_product_we_do_not_hold_is_refused():
    with pytest.raises(ProductNotFound, match="We hold no product 'appraisal'"):
        product_fulfiller_set(name="appraisal", fulfiller=CONNECTED)


def test_the_connected_fulfiller_registers_under_the_one_key():
    from partner.fulfillment.automated.fulfillers import FULFILLERS

    assert FULFILLERS[CONNECTED].key == CONNECTED
