"""The origin proxy, the progress and order-check endpoints, and the page's headers.

The endpoints are called with Django's test client; they talk to the sandbox
on the live server over real HTTP (the `service` fixture).
"""

import json

import pytest

from partner.sandbox.faults import fault_set, faults_clear
from partner.sandbox.models import Loan
from partner.sandbox.origins import origin_create, origin_expire
from tests.helpers.orders import result_of
from tests.helpers.urn_words import any_urn_words, spelled

pytestmark = pytest.mark.django_db

DEMO_SECRETS = ("demo-password-1", "not-the-password-9")


def launched(seed, username="lender.demo", loan=None):
    origin = origin_create(
        user=seed.users[username], loan=loan or seed.loans[0], product=seed.products["address-verification"]
    )
    return origin.origin_id, origin.partner_access_token


def proxy_get(client, origin_id, token):
    return client.get(f"/v1/origins/{origin_id}", {"partnerAccessToken": token})


@any_urn_words  # the sandbox lets the lender's instance order by its host URN, in those words
def test_valid_origin_gives_the_loan_summary_product_and_options(urn_words, demo, client):
    prefix, _, host = spelled(urn_words)
    access = demo.products["address-verification"].data["entitlements"]["access"]
    assert access["allow"] == [f"{prefix}:{host}:BE11223344"]
    origin_id, token = launched(demo)
    response = proxy_get(client, origin_id, token)

    assert response.status_code == 200
    body = response.json()
    loan = demo.loans[0].data
    assert body["loan"]["borrower"] == f"{loan['borrower']['firstName']} {loan['borrower']['lastName']}"
    assert body["loan"]["property"]["postalCode"] == loan["property"]["postalCode"]
    assert body["loan"]["property"]["streetAddress"] == loan["property"]["streetAddress"]
    assert body["loan"]["loanPurposeType"] == loan["property"]["loanPurposeType"]
    assert body["product"]["name"] == "address-verification"
    assert [option["name"] for option in body["orderOptions"]] == ["comments"]
    assert body["user"]["name"] == "Dana Demo"


def test_response_never_carries_credentials(demo, client):
    origin_id, token = launched(demo)
    text = proxy_get(client, origin_id, token).content.decode()

    assert "credentials" not in text
    for secret in (*DEMO_SECRETS, "DEMO01", token):
        assert secret not in text
    # Nor the borrower's contact data: the page needs the name only.
    assert demo.loans[0].data["borrower"]["email"] not in text


@pytest.mark.parametrize(
    ("username", "missing", "title"),
    [
        ("lender.wrong", False, "Your partner credentials were not accepted"),
        ("lender.nocreds", True, "No partner credentials are set up for this product"),
    ],
)
def test_invalid_credentials_answer_401_with_a_status_text(demo, client, username, missing, title):
    origin_id, token = launched(demo, username)
    response = proxy_get(client, origin_id, token)

    assert response.status_code == 401
    body = response.json()
    assert isinstance(body["status"], str) and body["status"]
    # Missing credentials are told apart from refused ones, in words, for the product by its name.
    assert (body["missing"], body["title"], body["product"]) == (missing, title, "Address Verification")
    assert "Address Verification" in body["next"] and "user name and password" in body["next"]
    assert "loan" not in body
    for secret in DEMO_SECRETS:
        assert secret not in response.content.decode()


def test_expired_origin_is_refused_with_errors_holding_the_service_status(demo, client):
    origin_id, token = launched(demo)
    origin_expire(origin=demo.users["lender.demo"].origin_set.get(origin_id=origin_id))
    response = proxy_get(client, origin_id, token)

    assert response.status_code == 401  # the page renews the origin on this answer
    errors = response.json()["errors"]
    assert errors[0]["code"] == "origin_expired"
    assert errors[0]["status"] in (401, 403, 404, 410)
    assert "status" not in response.json()  # not mistaken for a credentials refusal


def test_wrong_token_is_refused_with_errors(demo, client):
    origin_id, _ = launched(demo)
    response = proxy_get(client, origin_id, "not-the-token")

    assert response.status_code == 401
    assert response.json()["errors"][0]["status"] in (401, 403, 404)


def test_service_failure_gives_errors_with_its_status(demo, client, settings):
    settings.SVC_MAX_RETRIES = 0
    origin_id, token = launched(demo)
    fault_set(endpoint="origin", status=503)
    try:
        response = proxy_get(client, origin_id, token)
    finally:
        faults_clear()

    assert response.status_code == 502
    errors = response.json()["errors"]
    assert errors[0]["status"] == 503
    assert errors[0]["code"] == "service_unavailable"


def test_missing_loan_gives_the_loan_not_found_error(demo, client):
    empty = Loan.objects.create(instance=demo.instance, guid="empty-loan-guid-0001", data={})
    origin_id, token = launched(demo, loan=empty)
    response = proxy_get(client, origin_id, token)

    assert response.status_code == 404
    assert response.json()["errors"][0]["message"] == "loan object was not found"


def test_token_may_come_in_a_header(demo, client):
    origin_id, token = launched(demo)
    response = client.get(f"/v1/origins/{origin_id}", HTTP_X_PARTNER_ACCESS_TOKEN=token)
    assert response.status_code == 200
    assert response.json()["loan"]["borrower"]


def test_missing_token_is_refused_without_calling_the_service(demo, client):
    origin_id, _ = launched(demo)
    response = client.get(f"/v1/origins/{origin_id}")
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "origin_missing"


# ---- the transaction progress endpoint --------------------------------------------------------


def origin_headers(origin_id, token):
    return {"HTTP_X_ORIGIN_ID": origin_id, "HTTP_X_PARTNER_ACCESS_TOKEN": token}


def test_progress_needs_a_live_origin(demo, client):
    response = client.get("/ui/transactions/some-transaction")
    assert response.status_code == 400
    origin_id, token = launched(demo, "lender.wrong")
    response = client.get("/ui/transactions/some-transaction", **origin_headers(origin_id, token))
    assert response.status_code == 401
    assert "status" in response.json()


def test_progress_of_a_transaction_without_order_is_requested(demo, client):
    origin_id, token = launched(demo)
    response = client.get("/ui/transactions/not-yet-known", **origin_headers(origin_id, token))
    assert response.status_code == 200
    body = response.json()
    assert body["step"] == "requested"
    assert body["finished"] is False
    assert body["documents"] == []


def test_progress_shows_the_order_state_and_attachments(demo, client):
    from partner.fulfillment.models import Order, OrderStatus

    order = Order.objects.create(
        transaction_id="tx-progress-1", product_name="address-verification", status=OrderStatus.REQUEST_COMPLETED
    )
    order.attachments.create(
        delivery=result_of(order, "confirmed"),
        position=0,
        name="address-report.pdf",
        mime_type="application/pdf",
        size=8,
        resource_id="res-1",
        uploaded_at=order.created_at,
    )
    origin_id, token = launched(demo)
    body = client.get("/ui/transactions/tx-progress-1", **origin_headers(origin_id, token)).json()

    assert body["step"] == "completed"
    assert body["finished"] is True
    (document,) = order.attachments.all()
    assert body["documents"] == [
        {
            "id": document.pk,
            "name": "address-report.pdf",
            "mime_type": "application/pdf",
            "size": 8,
            "resource_id": "res-1",
            "download_url": None,  # its file is not kept here: the service's copy is opened in the host
        }
    ]


def test_progress_of_another_products_transaction_is_not_shown(demo, client):
    from partner.fulfillment.models import Order, OrderStatus

    Order.objects.create(
        transaction_id="tx-other-1", product_name="disclosure-delivery", status=OrderStatus.IN_PROGRESS
    )
    origin_id, token = launched(demo)
    response = client.get("/ui/transactions/tx-other-1", **origin_headers(origin_id, token))
    assert response.status_code == 404


def account_of(username: str, company: str):
    from partner.catalog.models import PartnerAccount
    from partner.catalog.services import partner_account_set

    if PartnerAccount.objects.filter(username=username).exists():
        return partner_account_set(username=username, company=company)[0]  # the password stays as it is
    return partner_account_set(username=username, password="someone-elses-password-3", company=company)[0]


@pytest.mark.parametrize(
    "owner, shown",
    [
        (("lender.demo", "DEMO01"), True),  # the lender's own order
        (("colleague.demo", "DEMO01"), True),  # a colleague's order at the same lender
        (("lender.other", "OTHER01"), False),  # another lender's order, even with a valid origin
    ],
)
def test_progress_is_shown_to_the_ordering_lender_only(demo, client, owner, shown):
    from partner.fulfillment.models import FailureCode, Order, OrderStatus

    Order.objects.create(
        transaction_id="tx-owned-1",
        product_name="address-verification",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.ORDER_REFUSED,
        failure_reason="Subject property ZIP code 99999 is unknown",
        ordered_by=account_of(*owner),
    )
    origin_id, token = launched(demo)
    response = client.get("/ui/transactions/tx-owned-1", **origin_headers(origin_id, token))
    if shown:
        assert response.status_code == 200
        assert response.json()["reason"] == "Subject property ZIP code 99999 is unknown"
    else:
        assert response.status_code == 404
        assert "99999" not in response.content.decode()


# ---- the order check -------------------------------------------------------------------------


def test_order_check_cleans_the_options(demo, client):
    origin_id, token = launched(demo)
    response = client.post(
        "/ui/orders/check",
        data=json.dumps({"options": {"comments": "  Rush please  "}}),
        content_type="application/json",
        **origin_headers(origin_id, token),
    )
    assert response.status_code == 200
    assert response.json() == {"request": {"type": "NEW_REQUEST", "options": {"comments": "Rush please"}}}


def test_order_check_reports_field_errors(demo, client):
    origin_id, token = launched(demo)
    response = client.post(
        "/ui/orders/check",
        data=json.dumps({"options": {"comments": "x" * 501}}),
        content_type="application/json",
        **origin_headers(origin_id, token),
    )
    assert response.status_code == 400
    assert "comments" in response.json()["fields"]


def test_order_check_requires_the_csrf_token(demo):
    from django.test import Client

    origin_id, token = launched(demo)
    strict = Client(enforce_csrf_checks=True)
    response = strict.post(
        "/ui/orders/check",
        data=json.dumps({"options": {}}),
        content_type="application/json",
        **origin_headers(origin_id, token),
    )
    assert response.status_code == 403

    page = strict.get("/")
    csrf = page.cookies["csrftoken"].value
    response = strict.post(
        "/ui/orders/check",
        data=json.dumps({"options": {}}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=csrf,
        **origin_headers(origin_id, token),
    )
    assert response.status_code == 200


# ---- headers of the pages ------------------------------------------------------------------


def test_embed_page_may_be_framed_by_the_host_only(client, settings):
    settings.HOST_ORIGINS = ["https://host.example"]
    response = client.get("/")

    assert response.status_code == 200
    assert "X-Frame-Options" not in response
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://host.example" in policy
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy


def test_embed_page_has_no_inline_script_and_no_secret(client, settings):
    html = client.get("/").content.decode()
    assert "<script>" not in html  # every script has a src
    assert 'src="/static/vendor/em-ssf-guest/elli.ssf.guest.js"' in html
    assert settings.SVC_CLIENT_SECRET not in html
    for secret in settings.SVC_SIGNING_SECRETS:
        assert secret not in html


def test_other_pages_keep_x_frame_options_deny(client):
    assert client.get("/healthz")["X-Frame-Options"] == "DENY"
    assert client.get("/sandbox/host/")["X-Frame-Options"] == "DENY"


def test_changed_credentials_are_checked_again_at_once(demo, client):
    origin_id, token = launched(demo)
    assert proxy_get(client, origin_id, token).status_code == 200

    user = demo.users["lender.demo"]
    user.credentials = {"username": "lender.demo", "password": "changed-password-3", "companyCode": "DEMO01"}
    user.save()
    response = proxy_get(client, origin_id, token)

    assert response.status_code == 401
    assert "changed-password-3" not in response.content.decode()
