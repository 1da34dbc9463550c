"""The catalog admin: validation errors shown, secrets write-only and never in the HTML."""

import json
import logging

import pytest
from django.db import connection
from django.urls import reverse

from partner.catalog.models import CompanyCredential, PartnerAccount, PartnerCompany, Product
from tests.helpers.product_page import change_url, product_post_data
from tests.helpers.products import COMPANY_SECRET, USER_PASSWORD

pytestmark = pytest.mark.django_db

SIGNING_SECRET = "product-signing-secret-8c1d"


def test_valid_edit_is_saved(staff_client, product):
    data = product_post_data(
        staff_client, product, listing_name="Renamed", interface_url="https://partner.example.com/"
    )
    response = staff_client.post(change_url(product), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    product.refresh_from_db()
    assert product.listing_name == "Renamed"
    assert product.interface_url == "https://partner.example.com/"


# Entitlements and webhooks are rows: their messages, next to each row, in test_admin_forms.py.
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("interface_url", "not a url", "is not a valid http(s) URL"),
        ("request_types", "new request", "is not a request type"),
        ("tags_workflows", "automated, automated", "Values must not repeat."),
        ("data_origin", json.dumps(["loan"]), "Must be a JSON object."),
        ("fulfiller", "no_such_fulfiller", "Select a valid choice"),
    ],
)
def test_validation_errors_are_shown(staff_client, product, field, value, message):
    before = Product.objects.get(pk=product.pk).updated_at
    response = staff_client.post(change_url(product), product_post_data(staff_client, product, **{field: value}))
    assert response.status_code == 200
    html = response.content.decode()
    assert "errornote" in html
    assert message in html
    assert Product.objects.get(pk=product.pk).updated_at == before


def test_credential_definition_min_over_max_is_an_error(staff_client, product):
    data = product_post_data(
        staff_client,
        product,
        **{
            "credential_definitions-0-minimum": "10",
            "credential_definitions-0-maximum": "5",
            "credential_definitions-0-pattern": "([",
        },
    )
    html = staff_client.post(change_url(product), data).content.decode()
    assert "Must not be less than the minimum." in html
    assert "Not a valid regular expression" in html


def test_signing_secret_is_write_only_and_encrypted(staff_client, product, caplog):
    with caplog.at_level(logging.DEBUG):
        response = staff_client.post(
            change_url(product), product_post_data(staff_client, product, new_signing_secret=SIGNING_SECRET)
        )
    assert response.status_code == 302
    product.refresh_from_db()
    assert product.signing_secret == SIGNING_SECRET
    with connection.cursor() as cursor:
        cursor.execute("SELECT signing_secret FROM catalog_product WHERE id = %s", [product.pk])
        stored = cursor.fetchone()[0]
    assert SIGNING_SECRET not in stored

    for url in (reverse("admin:catalog_product_changelist"), change_url(product)):
        html = staff_client.get(url).content.decode()
        assert SIGNING_SECRET not in html
        assert "set (hidden)" in html
    assert SIGNING_SECRET not in caplog.text

    # An edit that leaves the secret field empty keeps the secret.
    staff_client.post(change_url(product), product_post_data(staff_client, product, listing_name="Again"))
    product.refresh_from_db()
    assert product.signing_secret == SIGNING_SECRET
    # ... and the clear box removes it.
    staff_client.post(change_url(product), product_post_data(staff_client, product, clear_signing_secret="on"))
    product.refresh_from_db()
    assert product.signing_secret == ""


def test_partner_account_password_is_hashed_and_never_shown(staff_client, caplog):
    company = PartnerCompany.objects.create(name="Acme Lending", code="ACME01")
    with caplog.at_level(logging.DEBUG):
        response = staff_client.post(
            reverse("admin:catalog_partneraccount_add"),
            {
                "username": "lender.acme",
                "company": company.pk,
                "active": "on",
                "password1": USER_PASSWORD,
                "password2": USER_PASSWORD,
            },
        )
    assert response.status_code == 302
    account = PartnerAccount.objects.get(username="lender.acme")
    assert account.check_password(USER_PASSWORD)
    assert USER_PASSWORD not in account.password
    for url in (
        reverse("admin:catalog_partneraccount_changelist"),
        reverse("admin:catalog_partneraccount_change", args=[account.pk]),
    ):
        html = staff_client.get(url).content.decode()
        assert USER_PASSWORD not in html
        assert account.password not in html  # not even the hash
    assert USER_PASSWORD not in caplog.text


def test_partner_account_passwords_must_match(staff_client):
    response = staff_client.post(
        reverse("admin:catalog_partneraccount_add"),
        {"username": "lender.x", "active": "on", "password1": USER_PASSWORD, "password2": "something-else"},
    )
    assert response.status_code == 200
    assert "The two passwords differ." in response.content.decode()
    assert not PartnerAccount.objects.filter(username="lender.x").exists()


def company_post_data(company, **extra):
    data = {
        "name": company.name,
        "code": company.code,
        "active": "on",
        "credentials-TOTAL_FORMS": "0",
        "credentials-INITIAL_FORMS": "0",
        "credentials-MIN_NUM_FORMS": "0",
        "credentials-MAX_NUM_FORMS": "1000",
    }
    data.update(extra)
    return data


def test_company_secret_is_write_only(staff_client, caplog):
    company = PartnerCompany.objects.create(name="Acme Lending", code="ACME01")
    url = reverse("admin:catalog_partnercompany_change", args=[company.pk])
    with caplog.at_level(logging.DEBUG):
        response = staff_client.post(
            url,
            company_post_data(
                company,
                **{
                    "credentials-TOTAL_FORMS": "1",
                    "credentials-0-key": "apiKey",
                    "credentials-0-secret": "on",
                    "credentials-0-new_value": COMPANY_SECRET,
                },
            ),
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    stored = CompanyCredential.objects.get(company=company, key="apiKey")
    assert stored.value == COMPANY_SECRET
    with connection.cursor() as cursor:
        cursor.execute("SELECT value FROM catalog_companycredential WHERE id = %s", [stored.pk])
        assert COMPANY_SECRET not in cursor.fetchone()[0]
    for page in (reverse("admin:catalog_partnercompany_changelist"), url):
        html = staff_client.get(page).content.decode()
        assert COMPANY_SECRET not in html
    assert "set (hidden)" in staff_client.get(url).content.decode()
    assert COMPANY_SECRET not in caplog.text


def test_new_company_credential_needs_a_value(staff_client):
    company = PartnerCompany.objects.create(name="Acme Lending", code="ACME01")
    url = reverse("admin:catalog_partnercompany_change", args=[company.pk])
    response = staff_client.post(
        url,
        company_post_data(
            company,
            **{
                "credentials-TOTAL_FORMS": "1",
                "credentials-0-key": "apiKey",
                "credentials-0-secret": "on",
            },
        ),
    )
    assert response.status_code == 200
    assert "A value is required for a new credential." in response.content.decode()


def test_products_list_search_and_filter(staff_client, product):
    from tests.helpers.products import product_make

    product_make(name="disclosure-delivery", service_id="prod-dd-1", fulfiller="disclosure_status")
    url = reverse("admin:catalog_product_changelist")
    html = staff_client.get(url, {"q": "disclosure"}).content.decode()
    assert "disclosure-delivery" in html and "address-verification" not in html
    html = staff_client.get(url, {"fulfiller": "address_verification"}).content.decode()
    assert "address-verification" in html and "disclosure-delivery" not in html
    assert "Pull from the service" in staff_client.get(url).content.decode()


def test_allow_instance_form_validates_the_urn(staff_client, product):
    url = reverse("admin:catalog_product_access", args=["allow"]) + f"?ids={product.pk}"
    page = staff_client.get(url).content.decode()
    assert product.name in page
    response = staff_client.post(url, {"ids": str(product.pk), "instance": "urn:svc:lender:BE1"})
    assert response.status_code == 200
    assert "is not a lender instance URN" in response.content.decode()


def test_admin_action_leads_to_the_instance_form(staff_client, product):
    response = staff_client.post(
        reverse("admin:catalog_product_changelist"),
        {"action": "deny_instance", "_selected_action": [product.pk]},
    )
    assert response.status_code == 302
    assert response["Location"].endswith(f"/access/deny/?ids={product.pk}")


@pytest.mark.parametrize(
    "name",
    ["catalog_product_add", "catalog_partnercompany_add", "catalog_partneraccount_add", "catalog_product_changelist"],
)
def test_admin_pages_render(staff_client, name):
    assert staff_client.get(reverse(f"admin:{name}")).status_code == 200


def test_account_edit_without_password_keeps_it(staff_client, account):
    url = reverse("admin:catalog_partneraccount_change", args=[account.pk])
    response = staff_client.post(
        url,
        {"username": account.username, "company": account.company_id, "active": "on", "password1": "", "password2": ""},
    )
    assert response.status_code == 302
    account.refresh_from_db()
    assert account.check_password(USER_PASSWORD)
