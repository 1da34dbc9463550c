"""`manage.py connection_create`: a connection made from a script, its credentials printed once."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from partner.catalog.models import Product
from partner.connector.models import Connection

pytestmark = pytest.mark.django_db


def create(*args) -> dict:
    out = io.StringIO()
    call_command("connection_create", *args, stdout=out)
    return dict(line.split("=", 1) for line in out.getvalue().splitlines())


def test_connection_create_makes_the_connection_and_prints_its_credentials(connected_product):
    printed = create("acme-amc", "--endpoint", "https://orders.acme.example/events", "--product", "appraisal")
    connection = Connection.objects.get(name="acme-amc")
    assert connection.endpoint_url == "https://orders.acme.example/events"
    assert list(connection.products.all()) == [connected_product]
    assert printed["CLIENT_ID"] == connection.application.client_id
    assert printed["CLIENT_SECRET"] and printed["CLIENT_SECRET"] != connection.application.client_secret  # hashed
    assert connection.secrets() == [printed["SIGNING_SECRET"]]


def test_connection_create_refuses_a_product_that_is_not_connected(connected_product):
    Product.objects.filter(pk=connected_product.pk).update(fulfiller="staff_worked")
    with pytest.raises(CommandError, match="No connected product 'appraisal'"):
        create("acme-amc", "--product", "appraisal")
    with pytest.raises(CommandError, match="No connected product 'nothing'"):
        create("acme-amc", "--product", "nothing")
    assert not Connection.objects.exists()
