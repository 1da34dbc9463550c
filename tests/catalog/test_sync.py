"""Products kept in step with the sandbox over real HTTP: pull (every page), push, merge patch, commands, admin."""

import copy
import io
import logging

import pytest
from django.conf import settings
from django.core.management import call_command
from django.urls import reverse

from partner.catalog import services
from partner.catalog.models import Product
from partner.catalog.selectors import product_get
from partner.platform import urns

pytestmark = pytest.mark.django_db

AV = "address-verification"
DD = "disclosure-delivery"
EXTRA = 53  # with the three demo products: 56 products, more than one page of 50


@pytest.fixture
def seeded(service):
    from partner.sandbox.seeding import sandbox_seed

    return sandbox_seed(public_base_url=service.url)


def sandbox_product(name):
    from partner.sandbox.models import Product as SandboxProduct

    return SandboxProduct.objects.get(name=name)


def sandbox_products_add(count):
    from partner.sandbox.models import Product as SandboxProduct

    template = sandbox_product(AV).data
    for index in range(count):
        data = copy.deepcopy(template)
        data.update(id=f"bulk-{index:03d}", name=f"bulk-product-{index:03d}", listingName=f"Bulk {index}")
        data["credentials"] = []
        data.pop("credential", None)
        SandboxProduct.objects.create(service_id=data["id"], name=data["name"], data=data)


def test_pull_reads_every_page(seeded, service_calls):
    sandbox_products_add(EXTRA)
    result = services.products_pull()
    listing = [c["url"] for c in service_calls if c["method"] == "GET" and "/partner/v2/products" in c["url"]]
    assert len(listing) == 2, listing  # 56 products: two pages of at most 50
    assert len(result.created) == EXTRA + 3
    assert Product.objects.count() == EXTRA + 3
    assert Product.objects.filter(name="bulk-product-052").exists()

    av = Product.objects.get(name=AV)
    expected = sandbox_product(AV)
    assert av.service_id == expected.service_id
    assert av.raw == {**expected.data, "id": expected.service_id}
    assert av.request_types == ["NEW_REQUEST", "ACCEPTED_ORDER"]
    assert av.tags_workflows == ["automated", "interactive"]
    assert (
        av.access_allow == [urns.instance_urn("BE11223344")]
        or av.access_allow == expected.data["entitlements"]["access"]["allow"]
    )
    assert av.webhooks == expected.data["webhooks"]
    assert av.extension_limit == expected.data.get("extensionLimit")
    definitions = {d.key: d for d in av.credential_definitions.all()}
    assert set(definitions) == {item["id"] for item in expected.data["credentials"]}
    assert definitions["password"].secret
    assert definitions["username"].scope == "user"
    assert definitions["companyCode"].scope == "company"
    assert av.fulfiller == "address_verification"
    assert Product.objects.get(name=DD).fulfiller == "disclosure_status"

    # A second pull updates rather than duplicates, and keeps our local settings.
    av.fulfiller = "disclosure_status"
    av.signing_secret = "our-own-signing-secret"
    av.save()
    again = services.products_pull()
    assert len(again.updated) == EXTRA + 3 and not again.created
    av.refresh_from_db()
    assert av.fulfiller == "disclosure_status"
    assert av.signing_secret == "our-own-signing-secret"


def test_product_ensure_pulls_an_unknown_product(seeded):
    assert product_get(name=DD) is None
    product = services.product_ensure(name=DD)
    assert product.service_id == sandbox_product(DD).service_id
    assert services.product_ensure(service_id=product.service_id) == product
    from partner.catalog.errors import ProductNotFound

    with pytest.raises(ProductNotFound):
        services.product_ensure(name="no-such-product")


def test_push_round_trip(seeded, service):
    from partner.sandbox.products import product_merge

    # The service's copy points somewhere else; ours changes a field.
    product_merge(
        product_id=sandbox_product(AV).service_id,
        patch={"interfaceUrl": "https://old.example.com/", "adminInterfaceUrl": "https://old.example.com/admin/"},
    )
    services.products_pull()
    product = Product.objects.get(name=AV)
    product.listing_name = "Address Verification Plus"
    product.tags_categories = ["APPRAISAL", "TITLE"]
    product.save()

    diff = services.product_diff(product)
    assert diff.found
    changed = {line.path: line for line in diff.lines}
    assert changed["listingName"].ours == "Address Verification Plus"
    assert changed["listingName"].theirs == "Address Verification"
    assert changed["interfaceUrl"].ours == f"{service.url}/"
    assert changed["interfaceUrl"].theirs == "https://old.example.com/"
    assert "tags.categories" in changed
    assert "name" not in changed

    services.product_push(product)
    stored = sandbox_product(AV).data
    assert stored["listingName"] == "Address Verification Plus"
    assert stored["tags"]["categories"] == ["APPRAISAL", "TITLE"]
    assert stored["interfaceUrl"] == f"{settings.PUBLIC_BASE_URL}/"
    assert stored["adminInterfaceUrl"] == f"{settings.PUBLIC_BASE_URL}/admin/"
    assert {hook["url"] for hook in stored["webhooks"]} == {f"{settings.PUBLIC_BASE_URL}/v1/webhooks"}
    assert stored["credentials"] == seeded.products[AV].data["credentials"]
    product.refresh_from_db()
    assert product.pushed_at is not None
    assert product.interface_url == f"{service.url}/"
    assert services.product_diff(product).lines == []


def test_push_of_an_invalid_product_sends_nothing(seeded):
    from partner.core.errors import ApplicationError

    services.products_pull()
    product = Product.objects.get(name=AV)
    before = copy.deepcopy(sandbox_product(AV).data)
    product.webhooks = [{"url": "https://x.example/h", "events": ["created"], "resource": "urn:svc:wrong"}]
    with pytest.raises(ApplicationError, match="resource must be one of"):
        services.product_push(product)
    assert sandbox_product(AV).data == before


def test_access_merge_patch_leaves_every_other_field_untouched(seeded):
    services.products_pull()
    product = Product.objects.get(name=AV)
    product.listing_name = "A local edit not pushed"
    product.save()
    before = copy.deepcopy(sandbox_product(AV).data)
    existing = before["entitlements"]["access"]["allow"]
    test_instance, other = urns.instance_urn("TEST000001"), urns.instance_urn("BAD0000002")

    services.product_access_patch(product, allow_add=[test_instance], deny_add=[other])

    after = sandbox_product(AV).data
    assert after["entitlements"]["access"] == {"allow": [*existing, test_instance], "deny": [other]}
    after_rest, before_rest = copy.deepcopy(after), copy.deepcopy(before)
    del after_rest["entitlements"]["access"], before_rest["entitlements"]["access"]
    assert after_rest == before_rest  # listingName included: the local edit was not sent
    product.refresh_from_db()
    assert product.access_allow == [*existing, test_instance]
    assert product.access_deny == [other]
    assert product.listing_name == "A local edit not pushed"

    # Denying an allowed instance moves it; removing takes it off.
    services.product_access_patch(product, deny_add=[test_instance], deny_remove=[other])
    access = sandbox_product(AV).data["entitlements"]["access"]
    assert access == {"allow": existing, "deny": [test_instance]}


def test_commands_pull_push_allow_deny(seeded, caplog):
    out = io.StringIO()
    with caplog.at_level(logging.DEBUG):
        call_command("sync_products", "--pull", stdout=out)
        assert "3 created" in out.getvalue()
        product = Product.objects.get(name=DD)
        product.listing_name = "Disclosures"
        product.save()
        diff_out = io.StringIO()
        call_command("sync_products", "--push", "--diff", "--product", DD, stdout=diff_out)
        assert "listingName: ours='Disclosures' service='Disclosure Delivery'" in diff_out.getvalue()
        assert sandbox_product(DD).data["listingName"] == "Disclosure Delivery"  # --diff pushes nothing
        call_command("sync_products", "--push", "--product", DD, stdout=out)
        assert sandbox_product(DD).data["listingName"] == "Disclosures"
        assert sandbox_product(AV).data["listingName"] == "Address Verification"  # not asked for
        urn = urns.instance_urn("ACCEPT0001")
        call_command("allow_instance", DD, urn, stdout=out)
        assert urn in sandbox_product(DD).data["entitlements"]["access"]["allow"]
        call_command("deny_instance", DD, urn, stdout=out)
        access = sandbox_product(DD).data["entitlements"]["access"]
        assert urn in access["deny"] and urn not in access["allow"]
    assert "denied for disclosure-delivery" in out.getvalue()
    assert settings.SVC_CLIENT_SECRET not in caplog.text
    assert settings.SVC_SIGNING_SECRETS[0] not in caplog.text


def test_admin_pull_push_and_allow(seeded, service, client, django_user_model, caplog):
    user = django_user_model.objects.create_superuser("staff", "staff@example.com", "staff-password-1")
    client.force_login(user)
    caplog.set_level(logging.DEBUG)

    response = client.post(reverse("admin:catalog_product_pull"), follow=True)
    assert "Pulled from the service: 3 created" in response.content.decode()
    product = Product.objects.get(name=AV)
    product.signing_secret = "admin-visible-never-1234"
    product.listing_name = "Edited in the admin"
    product.save()

    # The push action shows the differences first and pushes only once confirmed.
    response = client.post(
        reverse("admin:catalog_product_changelist"), {"action": "push_to_service", "_selected_action": [product.pk]}
    )
    page = client.get(response["Location"])
    html = page.content.decode()
    assert "listingName" in html and "Edited in the admin" in html and "Address Verification" in html
    assert "admin-visible-never-1234" not in html
    assert sandbox_product(AV).data["listingName"] == "Address Verification"
    response = client.post(response["Location"], {"ids": str(product.pk), "confirm": "yes"}, follow=True)
    assert f"Pushed {AV} to the service." in response.content.decode()
    assert sandbox_product(AV).data["listingName"] == "Edited in the admin"

    urn = urns.instance_urn("LENDERTEST1")
    url = reverse("admin:catalog_product_access", args=["allow"]) + f"?ids={product.pk}"
    response = client.post(url, {"ids": str(product.pk), "instance": urn}, follow=True)
    assert f"Allowed {urn} for {AV}." in response.content.decode()
    assert urn in sandbox_product(AV).data["entitlements"]["access"]["allow"]

    for page_url in (
        reverse("admin:catalog_product_changelist"),
        reverse("admin:catalog_product_change", args=[product.pk]),
    ):
        assert "admin-visible-never-1234" not in client.get(page_url).content.decode()
    assert "admin-visible-never-1234" not in caplog.text
    assert settings.SVC_CLIENT_SECRET not in caplog.text


def test_service_refusal_is_shown_not_raised(seeded, client, django_user_model):
    user = django_user_model.objects.create_superuser("staff", "staff@example.com", "staff-password-1")
    client.force_login(user)
    services.products_pull()
    product = Product.objects.get(name=AV)
    product.partner_id = "someone-else"  # managed by the service: a change is refused
    product.save()
    response = client.post(
        reverse("admin:catalog_product_push"), {"ids": str(product.pk), "confirm": "yes"}, follow=True
    )
    assert response.status_code == 200
    assert f"Pushing product {AV} failed" in response.content.decode()
    assert sandbox_product(AV).data["partnerId"] != "someone-else"


def test_pull_skips_a_product_whose_name_is_taken_locally(seeded):
    from tests.helpers.products import product_make

    product_make(name=AV, service_id="a-local-only-id")
    result = services.products_pull()
    assert result.created == [DD, "appraisal"]
    assert len(result.skipped) == 1 and AV in result.skipped[0]
    assert Product.objects.get(name=AV).service_id == "a-local-only-id"
