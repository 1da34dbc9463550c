"""Connected orders for the connector's tests, made the way the pipeline makes them."""

from partner.fulfillment.orders.services import order_open
from tests.helpers.orders import order_ran
from tests.helpers.products import LENDER_CREDENTIALS

TXN = "txn-connected-1"
LOAN = {
    "loanNumber": "LN-2026-0042",
    "property": {"streetAddress": "500 Howard Street", "postalCode": "94105"},
    "borrower": {"name": "Ann Example"},
}
# The request may carry the property and the loan number (not the borrower); the response the appraisal.
APPRAISAL_ENTITLEMENTS = {
    "data": {
        "transaction": [
            {
                "requestTypes": ["NEW_REQUEST"],
                "request": {"fields": ["property", "loanNumber"]},
                "response": {"fields": ["property", "appraisal"]},
            }
        ]
    }
}
PDF = b"%PDF-1.7\n% an appraisal report\n"


def connected_order(fake, *, transaction_id: str, product_name: str):
    """A connected order of lender.demo, acknowledged by the pipeline (its order.created stored)."""
    fake.transaction_add(
        transaction_id,
        request={
            "type": "NEW_REQUEST",
            "loan": LOAN,
            "credentials": LENDER_CREDENTIALS,
            "options": {"comments": "Gate code 1234"},
        },
        product_name=product_name,
    )
    order, _, _ = order_open(transaction_id=transaction_id, product_name=product_name)
    return order_ran(order_id=order.pk)


class ApiClient:
    """A partner system's client of the connector's API: a token by client credentials, then calls."""

    def __init__(self, base_url: str, client_id: str, client_secret: str, scope: str = "read answer"):
        import requests

        self.base = f"{base_url}/api/v1"
        self.session = requests.Session()
        answer = self.session.post(
            f"{self.base}/oauth/token",
            data={"grant_type": "client_credentials", "scope": scope},
            auth=(client_id, client_secret),
            timeout=10,
        )
        answer.raise_for_status()
        self.session.headers["Authorization"] = f"Bearer {answer.json()['access_token']}"

    def get(self, path: str, **params):
        return self.session.get(f"{self.base}{path}", params=params, timeout=10)

    def post(self, path: str, *, key: str, json=None, files=None):
        return self.session.post(
            f"{self.base}{path}", json=json, files=files, headers={"Idempotency-Key": key}, timeout=10
        )


class OrderSystem:
    """A partner's order system as a test starts it: an HTTP server that verifies each event's
    signature with the `standardwebhooks` library, keeps each webhook-id once (a repeat is answered
    204 and not kept again), answers the scripted statuses (or waits `delay` seconds first, past the
    sender's timeout), and hands each new event to `on_event` (in another thread) when set."""

    def __init__(self, secret: str, *, on_event=None):
        import json
        import threading
        import time
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        from standardwebhooks.webhooks import Webhook

        self.webhook = Webhook(secret)
        self.events: list[dict] = []  # verified, each webhook-id once, in arrival order
        self.posts = 0
        self.posts_of: dict[str, int] = {}  # webhook-id -> POSTs received of it (repeats included)
        self.refused = 0  # signature or timestamp refused
        self.script: list = []  # statuses (int) or ("slow", seconds) answered in turn; then 200
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most_at_once = 0
        system = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with system.lock:
                    system.posts += 1
                    message_id = self.headers.get("webhook-id", "")
                    system.posts_of[message_id] = system.posts_of.get(message_id, 0) + 1
                    system.in_flight += 1
                    system.most_at_once = max(system.most_at_once, system.in_flight)
                    step = system.script.pop(0) if system.script else 200
                try:
                    if isinstance(step, tuple):
                        time.sleep(step[1])
                        step = 200
                    status = self._receive(body, step)
                finally:
                    with system.lock:
                        system.in_flight -= 1
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _receive(self, body: bytes, status: int) -> int:
                try:
                    payload = system.webhook.verify(body, dict(self.headers))
                except Exception:
                    with system.lock:
                        system.refused += 1
                    return 401
                if status >= 300:
                    return status
                message_id = self.headers["webhook-id"]
                with system.lock:
                    if any(e["id"] == message_id for e in system.events):
                        return 204
                    system.events.append({"id": message_id, **json.loads(body)})
                if on_event is not None:
                    threading.Thread(target=on_event, args=(payload,), daemon=True).start()
                return 200

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/events"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def types(self, order_id=None) -> list[str]:
        return [e["type"] for e in self.events if order_id is None or e["data"]["order"]["id"] == order_id]

    def close(self):
        self.server.shutdown()
        self.server.server_close()
