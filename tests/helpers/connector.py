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
