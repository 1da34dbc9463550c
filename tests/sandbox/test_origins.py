"""Origins (#1) and the host API: the id and partner access token are valid 300 s and only together."""

from datetime import timedelta

import requests
from django.conf import settings as django_settings

from partner.platform import formats, urns
from partner.sandbox.models import Origin
from tests.helpers.sandbox import host_origin, host_transaction


def _get_origin(api, origin_id, pat):
    headers = {django_settings.SVC_PAT_HEADER: pat} if pat is not None else {}
    return api.get(api.url(f"/partner/v2/origins/{origin_id}"), headers=headers, timeout=10)


def test_origin_with_its_partner_access_token(api, sandbox):
    origin = host_origin(sandbox)
    assert "transactionId" not in origin
    answer = _get_origin(api, origin["id"], origin["partnerAccessToken"])
    assert answer.status_code == 200, answer.text
    document = answer.json()
    loan = sandbox.seed.loans[0]
    assert document["id"] == origin["id"]
    assert document["entityRef"] == {
        "entityId": urns.loan_urn("BE11223344", loan.guid),
        "entityType": urns.loan_entity_type(),
    }
    assert document["loanFormat"] == formats.LOAN_FORMAT
    assert document["loan"]["property"]["postalCode"] == "94105"
    assert set(document["loan"]["property"]) >= {
        "streetAddress",
        "city",
        "state",
        "postalCode",
        "county",
        "loanPurposeType",
        "propertyUsageType",
    }
    assert document["product"] == {
        "id": sandbox.seed.products["address-verification"].service_id,
        "partnerId": "P-DEMO-0001",
        "name": "address-verification",
    }
    assert document["credentials"] == {
        "username": "lender.demo",
        "password": "demo-password-1",
        "companyCode": "DEMO01",
    }
    assert document["environment"] == "sandbox"
    assert document["interfaceUrl"] == f"{sandbox.url}/"
    party = document["originatingParty"]
    assert party["name"] == "Demo Lender Bank"
    assert set(party["pointOfContact"]) == {"name", "role", "email", "phone", "personas"}


def test_no_credentials_key_when_the_user_has_none(api, sandbox):
    origin = host_origin(sandbox, user="lender.nocreds")
    document = _get_origin(api, origin["id"], origin["partnerAccessToken"]).json()
    assert "credentials" not in document


def test_wrong_pairs_are_refused(api, sandbox):
    first, second = host_origin(sandbox), host_origin(sandbox, loan=1)
    for origin_id, pat in [
        (first["id"], second["partnerAccessToken"]),
        (second["id"], first["partnerAccessToken"]),
        (first["id"], "made-up"),
        (first["id"], ""),
        (first["id"], None),
        ("unknown-origin", first["partnerAccessToken"]),
    ]:
        answer = _get_origin(api, origin_id, pat)
        assert answer.status_code == 401, (origin_id, pat)
        assert answer.json()["error"] == "invalid_origin"
        assert first["partnerAccessToken"] not in answer.text
    assert _get_origin(api, first["id"], first["partnerAccessToken"]).status_code == 200


def test_origin_expires_300_seconds_after_generation(api, sandbox):
    origin = host_origin(sandbox)
    row = Origin.objects.get(origin_id=origin["id"])
    Origin.objects.filter(pk=row.pk).update(generated_at=row.generated_at - timedelta(seconds=299))
    assert _get_origin(api, origin["id"], origin["partnerAccessToken"]).status_code == 200
    Origin.objects.filter(pk=row.pk).update(generated_at=row.generated_at - timedelta(seconds=301))
    assert _get_origin(api, origin["id"], origin["partnerAccessToken"]).status_code == 401


def test_host_expire_and_refresh(api, sandbox):
    origin = host_origin(sandbox)
    answer = requests.post(f"{sandbox.host_api}/origins/{origin['id']}/expire", timeout=10)
    assert answer.status_code == 204
    assert _get_origin(api, origin["id"], origin["partnerAccessToken"]).status_code == 401
    fresh = requests.post(f"{sandbox.host_api}/origins/{origin['id']}/refresh", timeout=10).json()
    assert fresh["id"] != origin["id"]
    assert fresh["partnerAccessToken"] != origin["partnerAccessToken"]
    assert _get_origin(api, fresh["id"], fresh["partnerAccessToken"]).status_code == 200


def test_origin_of_an_existing_transaction_carries_its_id(api, sandbox):
    transaction_id = host_transaction(sandbox)
    origin = host_origin(sandbox, transaction_id=transaction_id)
    assert origin["transactionId"] == transaction_id
    refreshed = requests.post(f"{sandbox.host_api}/origins/{origin['id']}/refresh", timeout=10).json()
    assert refreshed["transactionId"] == transaction_id


def test_host_context_lists_what_the_host_page_offers(sandbox):
    host_transaction(sandbox)
    context = requests.get(f"{sandbox.host_api}/context", timeout=10).json()
    users = {user["username"]: user for user in context["users"]}
    assert users["lender.demo"]["has_credentials"] is True
    assert users["lender.nocreds"]["has_credentials"] is False
    assert users["lender.demo"]["instance"] == "BE11223344"
    assert len(context["loans"]) == 5
    assert {"id", "guid", "borrower", "property"} <= set(context["loans"][0])
    assert {product["name"] for product in context["products"]} == {
        "address-verification",
        "disclosure-delivery",
        "appraisal",
    }
    assert len(context["transactions"]) == 1
    assert {"id", "product", "loan", "status", "created"} <= set(context["transactions"][0])
    assert "demo-password-1" not in requests.get(f"{sandbox.host_api}/context", timeout=10).text


def test_access_entitlements_govern_origins_and_transactions(api, sandbox):
    product = sandbox.seed.products["address-verification"]
    instance = urns.instance_urn("BE11223344")
    answer = api.patch(
        api.url(f"/partner/v2/products/{product.service_id}"),
        json={"entitlements": {"access": {"deny": [instance]}}},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    body = {
        "user_id": sandbox.seed.users["lender.demo"].pk,
        "loan_id": sandbox.seed.loans[0].pk,
        "product_id": product.service_id,
    }
    refused = requests.post(f"{sandbox.host_api}/origins", json=body, timeout=10)
    assert refused.status_code == 403
    assert refused.json()["error"] == "access_denied"
