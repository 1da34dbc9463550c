"""Fixtures of the sandbox tests: the seeded sandbox on the live server, a bearer
session against it, and a local webhook receiver that records the exact bytes.
"""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
import requests

from partner.sandbox import faults
from partner.sandbox.products import product_webhooks_point
from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.webhooks import webhook_deliveries_wait


class Receiver:
    """An HTTP server recording every POST; answers the queued statuses, then `default`."""

    def __init__(self):
        self.calls = []
        self.statuses = []
        self.default = 202
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.calls.append(SimpleNamespace(path=self.path, headers=dict(self.headers), body=body))
                    status = receiver.statuses.pop(0) if receiver.statuses else receiver.default
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/webhooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


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


def token_get(sandbox) -> str:
    from django.conf import settings

    answer = requests.post(
        sandbox.token_url,
        data={
            "grant_type": "client_credentials",
            "client_id": settings.SVC_CLIENT_ID,
            "client_secret": settings.SVC_CLIENT_SECRET,
        },
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["access_token"]


@pytest.fixture
def api(sandbox):
    """A requests session with a valid bearer token; `api.url(path)` is under the sandbox base."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token_get(sandbox)}"
    session.url = lambda path: f"{sandbox.base}{path}"
    yield session
    session.close()


def host_origin(sandbox, *, user="lender.demo", loan=0, product="address-verification", transaction_id=None):
    seed = sandbox.seed
    body = {
        "user_id": seed.users[user].pk,
        "loan_id": seed.loans[loan].pk,
        "product_id": seed.products[product].service_id,
    }
    if transaction_id:
        body["transaction_id"] = transaction_id
    answer = requests.post(f"{sandbox.host_api}/origins", json=body, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()


def host_transaction(sandbox, **kwargs) -> str:
    origin = host_origin(sandbox, **{k: v for k, v in kwargs.items() if k != "request"})
    answer = requests.post(
        f"{sandbox.host_api}/transactions",
        json={"origin_id": origin["id"], "request": kwargs.get("request", {})},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["transactionId"]
