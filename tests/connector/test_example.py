"""examples/order_system/ works an order end to end: run as its own process against the live server
with a real worker, it verifies the order.created event (its standard-library check), answers
through the API, and the order completes with its PDF delivered."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.catalog.services import product_fulfiller_set
from partner.connector.models import Event, EventState
from partner.connector.services import DEMO_SIGNING_SECRET, connection_create
from partner.fulfillment.models import OrderStatus
from partner.sandbox.models import Response
from tests.helpers.orders import order_of
from tests.helpers.ports import free_port
from tests.helpers.sandbox import order_placed
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "order_system" / "order_system.py"


def test_the_example_order_system_works_an_order(demo, service, celery_worker_live, tmp_path):
    port = free_port()
    product_fulfiller_set(name="appraisal", fulfiller=CONNECTED)  # the cached catalog dropped with it
    created = connection_create(
        name="example",
        endpoint_url=f"http://127.0.0.1:{port}/events",
        products=[Product.objects.get(name="appraisal")],
        signing_secret=DEMO_SIGNING_SECRET,
    )
    env = {
        **os.environ,
        "PARTNER_API": f"{service.url}/api/v1",
        "CLIENT_ID": created.client_id,
        "CLIENT_SECRET": created.client_secret,
        "PORT": str(port),
    }
    log = (tmp_path / "example.log").open("wb")
    example = subprocess.Popen([sys.executable, str(EXAMPLE)], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        txn = order_placed(demo, product="appraisal")
        order_of(txn.id, OrderStatus.REQUEST_COMPLETED, timeout=90)
        # Every event delivered (order.completed last) before the system stops: no send is left
        # retrying against a stopped system while the test's database is emptied.
        pending = Event.objects.filter(connection=created.connection).exclude(state=EventState.DELIVERED)
        wait_for(lambda: not pending.exists(), timeout=60, message="every event delivered to the example")
    finally:
        example.terminate()
        example.wait(timeout=10)
    response = Response.objects.get(transaction_id=txn.id)
    assert response.patch_count == 3  # the acknowledgement, the status update, the final delivery
    assert [r["name"] for r in response.data["resources"]] == ["report.pdf"]
    # the loan filled from the product's delivery form, read from the API
    appraisal = response.data["loan"]["appraisal"]
    assert appraisal["condition"] == "C3" and appraisal["appraisedValue"] == 812000
    output = (tmp_path / "example.log").read_text()
    assert "refused" not in output and "delivered" in output
