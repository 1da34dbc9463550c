"""Fixtures of the platform tests: a small real HTTP server for transport behaviour.

The sandbox on the live server is the service of the integration tests; this
server is for what the sandbox is not meant to do on demand (redirect, answer
a chosen status sequence, record exactly which headers arrived).
"""

import pytest

from tests.helpers.servers import TOKEN_PATH, FakeServer, Reply


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def fake_service(fake, settings):
    """Settings pointing the client at the fake server, a token route, fast backoff, an empty cache."""
    from django.core.cache import cache

    from partner.platform.http import sessions_close

    settings.SVC_BASE_URL = f"{fake.url}/svc"
    settings.SVC_TOKEN_URL = f"{fake.url}{TOKEN_PATH}"
    settings.SVC_RETRY_BACKOFF = 0.001
    settings.SVC_RETRY_BACKOFF_MAX = 0.01
    settings.SVC_MAX_RETRIES = 3
    settings.SVC_TIMEOUT = (2.0, 5.0)
    fake.route(
        "POST",
        TOKEN_PATH,
        Reply(200, {"access_token": "fake-access-token-1", "token_type": "Bearer", "expires_in": 3600}),
    )
    cache.clear()
    sessions_close()
    yield fake
    cache.clear()
    sessions_close()


@pytest.fixture
def sandbox(service, settings, fake):
    """The seeded sandbox on the live server, its webhooks sent to the local `fake` server (answers 202)."""
    from types import SimpleNamespace

    from partner.platform.http import sessions_close
    from partner.sandbox import faults
    from partner.sandbox.products import product_webhooks_point
    from partner.sandbox.seeding import sandbox_seed
    from partner.sandbox.webhooks import webhook_deliveries_wait

    settings.SVC_RETRY_BACKOFF = 0.01
    settings.SVC_RETRY_BACKOFF_MAX = 0.05
    settings.SANDBOX_WEBHOOK_BACKOFF = 0.01
    fake.route("POST", "/v1/webhooks", Reply(202, b""))
    sessions_close()
    faults.rules_forget()
    seed = sandbox_seed(public_base_url=service.url)
    for product in seed.products.values():
        product_webhooks_point(product=product, url=f"{fake.url}/v1/webhooks")
    yield SimpleNamespace(seed=seed, url=service.url, base=service.base_url, receiver=fake)
    assert webhook_deliveries_wait(20)
    faults.faults_clear()
    sessions_close()
