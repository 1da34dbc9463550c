"""Fixtures of the sandbox tests: the seeded sandbox on the live server, a bearer
session against it, and a local webhook receiver that records the exact bytes.
"""

from types import SimpleNamespace

import pytest
import requests

from partner.sandbox import faults
from partner.sandbox.products import product_webhooks_point
from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.sandbox import token_get
from tests.helpers.servers import Receiver


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def sandbox(service, settings, receiver):
    """The seeded sandbox on the live server; both demo products send their webhooks to `receiver`."""
    settings.SANDBOX_WEBHOOK_BACKOFF = 0.01
    settings.SANDBOX_WEBHOOK_MAX_ATTEMPTS = 4
    faults.rules_forget()
    seed = sandbox_seed(public_base_url=service.url)
    for product in seed.products.values():
        product_webhooks_point(product=product, url=receiver.url)
    yield SimpleNamespace(
        seed=seed,
        url=service.url,
        base=service.base_url,
        token_url=service.token_url,
        receiver=receiver,
        host_api=f"{service.url}/sandbox/host-api",
    )
    assert webhook_deliveries_wait(20)
    faults.faults_clear()


@pytest.fixture
def api(sandbox):
    """A requests session with a valid bearer token; `api.url(path)` is under the sandbox base."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token_get(sandbox)}"
    session.url = lambda path: f"{sandbox.base}{path}"
    yield session
    session.close()
