"""The preflight refuses stored connections that must not reach production: the demo's public
secrets (`connection_demo`) and an endpoint the current rule refuses, in `check --deploy` and at a
server's start (issue 36, Medium 6)."""

import pytest
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

from partner.connector.models import Connection
from partner.connector.services import DEMO_CLIENT_SECRET, DEMO_SIGNING_SECRET, connection_demo, secret_new
from partner.core.checks import START, preflight_at_start

pytestmark = pytest.mark.django_db


def connector_errors(tags=None) -> dict[str, str]:
    return {m.id: m.msg for m in run_checks(tags=tags, include_deployment_checks=True) if m.id.startswith("connector.")}


@pytest.fixture
def demo(settings, connected_product):
    settings.DEBUG = True
    connection = connection_demo(product_name=connected_product.name)
    settings.DEBUG = False
    return connection


def test_the_demo_connection_is_refused_in_the_preflight_and_at_start(settings, demo):
    errors = connector_errors()
    assert "demo-order-system" in errors["connector.E001"]
    assert "client secret and signing secret" in errors["connector.E001"]
    assert DEMO_CLIENT_SECRET not in str(errors) and DEMO_SIGNING_SECRET not in str(errors)
    assert "connector.E001" in connector_errors(tags=[START])  # a start check
    settings.PREFLIGHT_AT_START = True
    with pytest.raises(ImproperlyConfigured, match="connector.E001"):
        preflight_at_start()

    # its own secrets: the demo's public ones gone, nothing to refuse but its http endpoint
    demo.application.client_secret = "its-own-client-secret-7b3c9e0f1a2d4c5b6a7f8e9d0c1b2a3f"
    demo.application.save()
    Connection.objects.filter(pk=demo.pk).update(endpoint_url="https://orders.partner.example/events")
    demo.refresh_from_db()
    demo.signing_secrets = secret_new()
    demo.save()
    assert connector_errors() == {}

    settings.DEBUG = True  # a local run: the demo is what it is for
    demo.signing_secrets = DEMO_SIGNING_SECRET
    demo.save()
    assert "connector.E001" not in connector_errors()


def test_an_endpoint_the_rule_refuses_is_refused_in_the_preflight(settings, connection):
    settings.SANDBOX_ENABLED = False
    Connection.objects.filter(pk=connection.pk).update(endpoint_url="http://orders.partner.example/events")
    errors = connector_errors(tags=[START])
    assert "acme-amc" in errors["connector.E002"] and "https" in errors["connector.E002"]
    Connection.objects.filter(pk=connection.pk).update(endpoint_url="")  # it pulls: nothing to refuse
    assert connector_errors() == {}
