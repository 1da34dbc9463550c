"""The product's response form (what staff fill in when they deliver) and its listing name: checked and
cleaned where they enter, the admin's form and the listing import."""

import json

import pytest
from django.urls import reverse

from partner.catalog import response_forms
from partner.catalog.models import Product
from partner.catalog.services import products_import
from tests.helpers.product_page import change_url, product_post_data

pytestmark = pytest.mark.django_db


def test_the_default_form_describes_the_demo_appraisal_and_is_valid():
    form = response_forms.default_response_form()
    assert response_forms.response_form_problems(form) == []
    appraisal = form["properties"]["appraisal"]["properties"]
    assert [appraisal[key]["title"] for key in appraisal] == [
        "Appraised value",
        "Effective date",
        "Condition",
        "Comments",
    ]
    assert Product().response_form == form  # every new product starts with it


@pytest.mark.parametrize(
    ("form", "problem"),
    [
        ([1], "must be a JSON Schema object"),
        ({"type": "object", "properties": {"appraisal": {"type": "nonsense"}}}, "Not a valid JSON Schema"),
        ({"type": "object", "properties": {"appraisal": {"type": "string", "title": "A"}}}, "described as an object"),
        (
            {"type": "object", "properties": {"appraisal": {"type": "object", "title": "A", "properties": {}}}},
            "without properties",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "appraisal": {
                        "type": "object",
                        "title": "A",
                        "properties": {"photos": {"type": "array", "title": "P"}},
                    }
                },
            },
            "loan.appraisal.photos has type 'array'",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "appraisal": {"type": "object", "title": "A", "properties": {"value": {"type": "number"}}}
                },
            },
            "loan.appraisal.value needs a title",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "appraisal": {
                        "type": "object",
                        "title": "A",
                        "properties": {"value": {"type": "number", "format": "date", "title": "V"}},
                    }
                },
            },
            "has format 'date'; a number may have: money",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "appraisal": {
                        "type": "object",
                        "title": "A",
                        "properties": {"value": {"type": "number", "title": "V"}},
                        "x-order": ["value", "photos"],
                    }
                },
            },
            "x-order must list names of its properties only",
        ),
    ],
)
def test_a_form_a_page_cannot_draw_is_refused_with_its_reason(form, problem):
    [found] = response_forms.response_form_problems(form)
    assert problem in found


def test_the_admin_refuses_a_bad_response_form_and_changes_nothing(staff_client, product):
    before = Product.objects.get(pk=product.pk).response_form
    bad = {"type": "object", "properties": {"appraisal": {"type": "object", "title": "A", "properties": {}}}}
    data = product_post_data(staff_client, product, response_form=json.dumps(bad))
    response = staff_client.post(change_url(product), data)
    assert response.status_code == 200 and "is an object without properties" in response.content.decode()
    assert Product.objects.get(pk=product.pk).response_form == before

    edited = response_forms.default_response_form()
    edited["properties"]["appraisal"]["properties"]["comments"]["title"] = "Appraiser's comments"
    data = product_post_data(staff_client, product, response_form=json.dumps(edited))
    assert staff_client.post(change_url(product), data).status_code == 302
    assert Product.objects.get(pk=product.pk).response_form == edited


def test_a_listing_name_with_line_breaks_is_one_line_from_the_admin(staff_client, product):
    data = product_post_data(staff_client, product, listing_name="Residential\r\nappraisal\n")
    assert staff_client.post(change_url(product), data).status_code == 302
    assert Product.objects.get(pk=product.pk).listing_name == "Residential appraisal"


def test_a_listing_name_with_line_breaks_is_one_line_from_the_listing():
    products_import([{"id": "prod-crlf", "name": "crlf-appraisal", "listingName": "Appraisal\r\nBcc: x@y.example"}])
    assert Product.objects.get(name="crlf-appraisal").listing_name == "Appraisal Bcc: x@y.example"


def test_the_product_list_says_the_secret_state_in_a_word(staff_client, product, settings):
    settings.SVC_SIGNING_SECRETS = []
    listing = staff_client.get(reverse("admin:catalog_product_changelist")).content.decode()
    cell = listing.split('class="field-signing_secret_short"')[1].split("</td>")[0]
    assert cell.endswith(">none</span>")  # the whole sentence is its tooltip, and the product's page
