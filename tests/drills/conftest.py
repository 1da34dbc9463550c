"""Fixtures of the fault drills: demo data on the live server, and counters of service calls."""

import threading
from collections import Counter

import pytest

from partner.catalog.services import partner_account_set, products_pull
from partner.platform.signals import service_call_finished, token_requested
from partner.sandbox.faults import faults_clear
from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.transactions import transaction_create
from partner.sandbox.webhooks import webhook_deliveries_wait


@pytest.fixture
def demo(service):
    seed = sandbox_seed(public_base_url=service.url)
    partner_account_set(username="lender.demo", password="demo-password-1", company="DEMO01")
    products_pull()
    yield seed
    faults_clear()
    webhook_deliveries_wait(timeout=10)


@pytest.fixture
def counted():
    """Service calls (by status: 200, 429, 503, None for a timeout) and token requests, from every thread."""
    seen = Counter()
    lock = threading.Lock()

    def on_call(sender, status=None, **kwargs):
        with lock:
            seen[("call", status)] += 1

    def on_token(sender, status=None, **kwargs):
        with lock:
            seen[("token", status)] += 1

    service_call_finished.connect(on_call, weak=False)
    token_requested.connect(on_token, weak=False)
    yield seen
    service_call_finished.disconnect(on_call)
    token_requested.disconnect(on_token)


def order(seed, count: int) -> list[str]:
    return [
        transaction_create(
            product=seed.products["address-verification"], user=seed.users["lender.demo"], loan=seed.loans[2]
        ).id
        for _ in range(count)
    ]
