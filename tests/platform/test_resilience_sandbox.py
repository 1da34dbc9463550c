"""Tokens, 401s and injected faults against the sandbox on the live server."""

import pytest

from partner.platform import client
from partner.platform.errors import ServiceAuthenticationError, ServiceRateLimitError, ServiceUnavailableError
from partner.platform.formats import LOAN_FORMAT
from partner.sandbox.faults import fault_set
from partner.sandbox.models import AccessToken, Response
from partner.sandbox.origins import origin_create, origin_expire, origin_refresh
from partner.sandbox.tokens import token_revoke_all
from partner.sandbox.transactions import transaction_create
from tests.helpers.processes import token_race_with_another_process

pytestmark = pytest.mark.django_db


def new_transaction(sandbox):
    seed = sandbox.seed
    return transaction_create(
        product=seed.products["address-verification"],
        user=seed.users["lender.demo"],
        loan=seed.loans[0],
        send_webhook=False,
    )


def calls_to(calls, suffix, method="GET"):
    return [c for c in calls if c["method"] == method and c["url"].endswith(suffix)]


def test_two_processes_make_one_token_request(sandbox, service_calls):
    fault_set(endpoint="token", latency=0.5)  # both processes ask while the first is pending
    race = token_race_with_another_process(service_calls)
    assert race["ours"]["requests"] + race["theirs"]["requests"] == 1
    assert len(race["ours"]["tokens"]) == 1 and race["ours"]["tokens"] == race["theirs"]["tokens"]
    assert AccessToken.objects.count() == 1


def test_a_401_renews_the_token_and_retries_once(sandbox, service_calls):
    created = new_transaction(sandbox)
    client.get_transaction(created.id)
    token_revoke_all()  # the cached token is now refused
    assert client.get_transaction(created.id).id == created.id
    assert [c["status"] for c in calls_to(service_calls, created.id)] == [200, 401, 200]
    assert len(service_calls.tokens) == 2


def test_a_second_401_fails(sandbox, settings, service_calls):
    settings.SANDBOX_TOKEN_LIFETIME = 0  # every token the sandbox issues is already expired
    created = new_transaction(sandbox)
    with pytest.raises(ServiceAuthenticationError) as caught:
        client.get_transaction(created.id)
    assert caught.value.status == 401
    assert [c["status"] for c in calls_to(service_calls, created.id)] == [401, 401]
    assert len(service_calls.tokens) == 2


@pytest.mark.parametrize("status", [503, 429])
def test_get_is_retried_on_injected_faults(sandbox, service_calls, status):
    created = new_transaction(sandbox)
    fault_set(endpoint="transaction", status=status, count=2, retry_after=0)
    assert client.get_transaction(created.id).id == created.id
    assert [c["status"] for c in calls_to(service_calls, created.id)] == [status, status, 200]


def test_get_gives_up_when_the_fault_lasts(sandbox, settings, service_calls):
    settings.SVC_MAX_RETRIES = 2
    created = new_transaction(sandbox)
    fault_set(endpoint="transaction", status=503, retry_after=0)
    with pytest.raises(ServiceUnavailableError) as caught:
        client.get_transaction(created.id)
    assert caught.value.transient and caught.value.status == 503
    assert len(calls_to(service_calls, created.id)) == 3


@pytest.mark.parametrize(("status", "error"), [(503, ServiceUnavailableError), (429, ServiceRateLimitError)])
def test_the_response_patch_is_not_retried(sandbox, service_calls, status, error):
    created = new_transaction(sandbox)
    fault_set(endpoint="response", status=status, count=1, retry_after=0)
    payload = {"status": "processing", "loanFormat": LOAN_FORMAT}
    with pytest.raises(error) as caught:
        client.patch_response(created.id, payload)
    assert caught.value.transient
    assert len(calls_to(service_calls, "/response", method="PATCH")) == 1
    assert not Response.objects.filter(transaction_id=created.id).exists()
    client.patch_response(created.id, payload)  # the fault hit that one call only
    assert Response.objects.get(transaction_id=created.id).patch_count == 1


def test_slot_request_and_upload_are_retried(sandbox, service_calls):
    created = new_transaction(sandbox)
    fault_set(endpoint="resources", status=503, count=1, retry_after=0)
    [slot] = client.request_upload_slots(created.id, [{"name": "r.pdf", "mimeType": "application/pdf"}])
    fault_set(endpoint="upload", status=503, count=1, retry_after=0)
    client.upload_resource(slot, b"%PDF-1.4")
    assert [c["status"] for c in calls_to(service_calls, "/response/resources", method="POST")] == [503, 200]
    assert [c["status"] for c in service_calls if c["method"] == "PUT"] == [503, 200]


def test_product_merge_patch_is_retried(sandbox, service_calls):
    product_id = sandbox.seed.products["address-verification"].service_id
    fault_set(endpoint="product", status=503, count=1, retry_after=0)
    assert client.patch_product(product_id, {"listingName": "Retried"}).listing_name == "Retried"
    assert [c["status"] for c in calls_to(service_calls, product_id, method="PATCH")] == [503, 200]


def test_an_expired_origin_does_not_cost_a_token_request(sandbox, service_calls):
    seed = sandbox.seed
    origin = origin_create(
        user=seed.users["lender.demo"], loan=seed.loans[0], product=seed.products["address-verification"]
    )
    client.get_origin(origin.origin_id, origin.partner_access_token)
    origin_expire(origin=origin)
    with pytest.raises(ServiceAuthenticationError):
        client.get_origin(origin.origin_id, origin.partner_access_token)
    assert len(service_calls.tokens) == 1  # the origin's 401 names no Bearer scheme: our token stays
    token_revoke_all()
    origin = origin_refresh(origin=origin)
    assert client.get_origin(origin.origin_id, origin.partner_access_token).id == origin.origin_id
    assert len(service_calls.tokens) == 2  # a refused bearer token is renewed for #1 too
    assert [c["status"] for c in service_calls] == [200, 401, 401, 200]
