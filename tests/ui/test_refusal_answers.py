"""Every refusal of the embedded UI answers, byte for byte, the body the page and the host read.

Each refusal is an application error whose `extra` is the answer's body and whose `status_code`
its status (partner/ui/errors.py); the views answer them as they are. These pin the bytes of the
origin proxy's, the progress poll's, the document download's and the order check's refusals, the
service and the catalog stood in for where a refusal starts with them. The API views answer DRF's
compact JSON, the plain Django views (download, order check) Django's JsonResponse.
"""

from types import SimpleNamespace

import pytest

from partner.catalog.credentials import CredentialCheck
from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.fulfillment.models import Order
from partner.platform import client as platform
from partner.platform.errors import ServiceAuthenticationError, ServiceUnavailableError, ServiceValidationError
from partner.platform.types import Origin
from partner.ui import services
from partner.ui.panel_sessions import PanelSession, panel_session_issue

pytestmark = pytest.mark.django_db

PRODUCT = SimpleNamespace(
    service_id="prod-1", name="address-verification", listing_name="Address Verification", fulfiller="x"
)
EXPIRED = b'{"errors":[{"status":401,"code":"origin_expired","message":"The lender\'s session with the host has ended or was not recognised."}]}'  # noqa: E501
UNAVAILABLE = b'{"errors":[{"status":null,"code":"service_unavailable","message":"The service did not answer. Try again in a minute."}]}'  # noqa: E501


@pytest.fixture(autouse=True)
def _unlimited(settings):
    settings.RATELIMIT_ORIGIN = "100000/m"  # other runs share the counting cache: no 429 here


def origin(**data) -> Origin:
    return Origin.from_json({"id": "origin-1", "product": {"id": "prod-1"}, **data})


def service_answers(monkeypatch, answer):
    def get_origin(origin_id, partner_access_token):
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(platform, "get_origin", get_origin)


def proxy(client, pat="pat-1"):
    return client.get("/v1/origins/origin-1", {"partnerAccessToken": pat} if pat else {})


@pytest.mark.parametrize(
    ("token", "status", "body"),
    [
        (
            "",
            400,
            b'{"errors":[{"status":null,"code":"origin_missing","message":"An origin id and partner access token are required."}]}',  # noqa: E501
        ),
        (
            "not a token",
            400,
            b'{"errors":[{"status":null,"code":"origin_malformed","message":"The origin id or partner access token is malformed."}]}',  # noqa: E501
        ),
    ],
)
def test_the_proxy_refuses_a_missing_or_malformed_origin(client, token, status, body):
    response = proxy(client, token)
    assert (response.status_code, response.content) == (status, body)


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (ServiceAuthenticationError("origin retrieval refused", status=401), 401, EXPIRED),
        (ServiceUnavailableError("no answer"), 502, UNAVAILABLE),
        (
            ServiceValidationError("origin retrieval rejected", status=400),
            502,
            b'{"errors":[{"status":400,"code":"service_refused","message":"The service refused to give the origin."}]}',
        ),
    ],
    ids=["expired", "unavailable", "refused"],
)
def test_the_proxy_answers_a_failed_call_to_the_service(client, monkeypatch, error, status, body):
    service_answers(monkeypatch, error)
    response = proxy(client)
    assert (response.status_code, response.content) == (status, body)


@pytest.mark.parametrize(
    ("answer", "status", "body"),
    [
        (
            origin(errors=[{"code": "E1", "message": "Origin is broken"}]),
            502,
            b'{"errors":[{"code":"E1","message":"Origin is broken"}]}',
        ),
        (origin(errors={"code": "E2"}), 502, b'{"errors":[{"code":"E2"}]}'),
        (
            origin(),
            404,
            b'{"errors":[{"status":null,"code":"loan_missing","message":"loan object was not found"}]}',
        ),
    ],
    ids=["errors", "one error", "no loan"],
)
def test_the_proxy_answers_an_origin_it_cannot_show(client, monkeypatch, answer, status, body):
    service_answers(monkeypatch, answer)
    response = proxy(client)
    assert (response.status_code, response.content) == (status, body)


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (
            ProductNotFound("The service lists no product 'prod-1'."),
            404,
            b'{"errors":[{"status":null,"code":"product_unknown","message":"This product is not set up with the partner. Contact the partner\'s support."}]}',  # noqa: E501
        ),
        (ProductSyncError("Reading the product listing failed"), 502, UNAVAILABLE),
    ],
    ids=["unknown", "sync failed"],
)
def test_the_proxy_answers_a_product_it_cannot_find(client, monkeypatch, error, status, body):
    service_answers(monkeypatch, origin(loan={"loanNumber": "L-1"}))

    def product_ensure(**kwargs):
        raise error

    monkeypatch.setattr(services, "product_ensure", product_ensure)
    response = proxy(client)
    assert (response.status_code, response.content) == (status, body)


def test_the_proxy_answers_refused_credentials_with_a_status_text(client, monkeypatch):
    service_answers(monkeypatch, origin(loan={"loanNumber": "L-1"}))
    monkeypatch.setattr(services, "product_ensure", lambda **kwargs: PRODUCT)
    check = CredentialCheck(False, None, "The user name or password is wrong: fix them in the host.")
    monkeypatch.setattr(services, "credentials_check", lambda **kwargs: check)
    response = proxy(client)
    assert (response.status_code, response.content) == (
        401,
        b'{"status":"The user name or password is wrong: fix them in the host.","product":"Address Verification",'
        b'"missing":false,"title":"Your partner credentials were not accepted",'
        b'"text":"The user name or password is wrong: fix them in the host.",'
        b'"next":"Ask your administrator to correct your user name and password for Address Verification in the '
        b"loan application's settings (the ones the partner gave you), then close this page and open it again "
        b'from the loan."}',
    )


def panel(product_name="address-verification") -> str:
    session = PanelSession(
        origin_id="origin-1", product_name=product_name, loan_number="L-1", account_id=None, company_id=None
    )
    return panel_session_issue(session)


SESSION_ENDED = (
    b'{"errors":[{"status":null,"code":"panel_session_expired",'
    b'"message":"The page\'s session has ended: renew the origin and ask again."}]}'
)
SESSION_ENDED_DJANGO = (
    b'{"errors": [{"status": null, "code": "panel_session_expired", '
    b'"message": "The page\'s session has ended: renew the origin and ask again."}]}'
)
DOCUMENT_UNKNOWN = (
    b'{"errors": [{"status": null, "code": "document_unknown", "message": "No such document for this order."}]}'
)


def test_the_progress_poll_refuses_a_forged_session_and_another_products_order(client):
    response = client.get("/ui/transactions/txn-1", HTTP_X_PANEL_SESSION="forged")
    assert (response.status_code, response.content) == (401, SESSION_ENDED)

    Order.objects.create(transaction_id="txn-1", product_name="another-product")
    response = client.get("/ui/transactions/txn-1", HTTP_X_PANEL_SESSION=panel())
    assert (response.status_code, response.content) == (
        404,
        b'{"errors":[{"status":null,"code":"transaction_unknown","message":"No such order for this product."}]}',
    )


def test_the_download_refuses_alike_whatever_the_reason(client):
    response = client.get("/ui/transactions/txn-1/documents/1", HTTP_X_PANEL_SESSION="forged")
    assert (response.status_code, response.content) == (401, SESSION_ENDED_DJANGO)

    Order.objects.create(transaction_id="txn-1", product_name="another-product")
    Order.objects.create(transaction_id="txn-2", product_name="address-verification")
    for transaction_id, document_id in (("txn-1", "1"), ("txn-2", "not-a-number"), ("txn-2", "1"), ("txn-9", "1")):
        response = client.get(
            f"/ui/transactions/{transaction_id}/documents/{document_id}", HTTP_X_PANEL_SESSION=panel()
        )
        assert (response.status_code, response.content) == (404, DOCUMENT_UNKNOWN), (transaction_id, document_id)


def test_the_order_check_answers_the_proxys_refusal(client):
    response = client.post("/ui/orders/check", data=b"{}", content_type="application/json")
    assert (response.status_code, response.content) == (
        400,
        b'{"errors": [{"status": null, "code": "origin_missing", '
        b'"message": "An origin id and partner access token are required."}]}',
    )
