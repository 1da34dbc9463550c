"""The sandbox as a test drives it: orders placed the way the host places them (a transaction of
the seeded demo, which sends us its webhook), the host's origins, and the sandbox's own token."""

import requests

from partner.sandbox.transactions import transaction_create


def order_placed(seed, *, user="lender.demo", product="address-verification", loan=2, **kwargs):
    """A transaction of the seeded sandbox, as the host makes it: the sandbox sends us its webhook."""
    return transaction_create(product=seed.products[product], user=seed.users[user], loan=seed.loans[loan], **kwargs)


def orders_placed(seed, count: int) -> list[str]:
    """`count` address verifications of lender.demo on the demo's third loan: their transaction ids."""
    return [order_placed(seed).id for _ in range(count)]


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
