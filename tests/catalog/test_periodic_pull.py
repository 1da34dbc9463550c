"""The periodic product pull: entitlement changes made on the service reach our copy."""

import pytest

from partner.catalog.models import Product
from partner.catalog.tasks import pull
from partner.sandbox.products import product_merge
from partner.sandbox.seeding import sandbox_seed

pytestmark = pytest.mark.django_db(transaction=True)


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


def as_posted(product, **overrides):
    """The admin change form of `product` with its current values, and `overrides`."""
    import json

    from tests.catalog.test_admin import product_post_data

    values = {
        name: getattr(product, name)
        for name in ("interface_url", "admin_interface_url", "service_created", "service_created_by")
    }
    for name in (
        "request_types",
        "tags_workflows",
        "tags_categories",
        "tags_applications",
        "access_allow",
        "access_deny",
        "data_origin",
        "data_transaction",
        "webhooks",
    ):
        values[name] = json.dumps(getattr(product, name))
    values["extension_limit"] = "" if product.extension_limit is None else str(product.extension_limit)
    values["fulfiller"] = product.fulfiller
    definitions = list(product.credential_definitions.all())
    values["credential_definitions-TOTAL_FORMS"] = str(len(definitions))
    values["credential_definitions-INITIAL_FORMS"] = str(len(definitions))
    for number, item in enumerate(definitions):
        prefix = f"credential_definitions-{number}-"
        values.update(
            {
                prefix + "id": str(item.pk),
                prefix + "product": str(product.pk),
                prefix + "key": item.key,
                prefix + "type": item.type,
                prefix + "title": item.title,
                prefix + "minimum": "" if item.minimum is None else str(item.minimum),
                prefix + "maximum": "" if item.maximum is None else str(item.maximum),
                prefix + "pattern": item.pattern,
                prefix + "scope": item.scope,
                prefix + "position": str(item.position),
            }
        )
        if item.secret:
            values[prefix + "secret"] = "on"
        if item.required:
            values[prefix + "required"] = "on"
    values.update(overrides)
    return product_post_data(product, **values)


def edit(staff, product, **overrides):
    from django.urls import reverse

    response = staff.post(reverse("admin:catalog_product_change", args=[product.pk]), as_posted(product, **overrides))
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
