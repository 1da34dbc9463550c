"""The periodic product pull: entitlement changes made on the service reach our copy."""

import pytest

from partner.catalog.models import Product
from partner.catalog.tasks import pull
from partner.sandbox.products import product_merge
from partner.sandbox.seeding import sandbox_seed

pytestmark = pytest.mark.django_db


def test_periodic_pull_brings_service_changes(service):
    seed = sandbox_seed(public_base_url=service.url)
    assert "3 created" in pull.apply().get()
    product = seed.products["address-verification"]
    product_merge(product_id=product.service_id, patch={"listingName": "Address check (renamed)"})
    assert "3 updated" in pull.apply().get()
    assert Product.objects.get(name="address-verification").listing_name == "Address check (renamed)"


# ---- staff edits not pushed yet are never undone by the periodic pull -------------------------


@pytest.fixture
def staff(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("staff", "staff@example.com", "staff-password-1"))
    return client


def edit(staff, product, **overrides):
    """Type `overrides` into the product's change page and save it."""
    from tests.helpers.product_page import change_url, product_post_data

    response = staff.post(change_url(product), product_post_data(staff, product, **overrides))
    assert response.status_code == 302, response.content.decode()[:2000]
    product.refresh_from_db()
    return product


def test_an_edit_waits_for_its_push_and_the_periodic_pull_leaves_it_alone(service, staff):
    from partner.catalog.services import product_push

    seed = sandbox_seed(public_base_url=service.url)
    pull.apply().get()
    product = edit(staff, Product.objects.get(name="address-verification"), listing_name="Ours, not pushed yet")
    assert product.unpushed_changes

    service_id = seed.products["address-verification"].service_id
    product_merge(product_id=service_id, patch={"listingName": "Renamed on the service"})
    outcome = pull.apply().get()
    assert "edited here and not pushed yet" in outcome
    product.refresh_from_db()
    assert product.listing_name == "Ours, not pushed yet"  # not undone behind the editor's back

    product_push(product)
    product.refresh_from_db()
    assert not product.unpushed_changes
    product_merge(product_id=service_id, patch={"listingName": "Renamed on the service again"})
    pull.apply().get()
    product.refresh_from_db()
    assert product.listing_name == "Renamed on the service again"  # in step again: the pull applies


def test_an_edit_of_our_own_fields_needs_no_push(service, staff):
    sandbox_seed(public_base_url=service.url)
    pull.apply().get()
    product = Product.objects.get(name="address-verification")
    other = "disclosure_status" if product.fulfiller != "disclosure_status" else "address_verification"
    product = edit(staff, product, fulfiller=other)
    assert product.fulfiller == other
    assert not product.unpushed_changes


def test_a_pull_by_hand_takes_the_services_copy(service, staff):
    from partner.catalog.services import products_pull

    seed = sandbox_seed(public_base_url=service.url)
    pull.apply().get()
    product = edit(staff, Product.objects.get(name="address-verification"), listing_name="Ours")
    product_merge(product_id=seed.products["address-verification"].service_id, patch={"listingName": "The service's"})
    products_pull()
    product.refresh_from_db()
    assert product.listing_name == "The service's"
    assert not product.unpushed_changes
