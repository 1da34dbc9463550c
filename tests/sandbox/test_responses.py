"""Transactions (#2), response PATCH rules (#3) and events (#6)."""

import pytest
import requests

from partner.platform import formats, urns
from partner.sandbox.models import Event, Response, Transaction
from tests.helpers.sandbox import host_transaction

LOAN = {
    "property": {
        "streetAddress": "350 5th Avenue",
        "city": "New York",
        "state": "NY",
        "postalCode": "10001",
        "county": "New York",
    }
}
DISCLOSURE = {
    "format": formats.DISCLOSURE_FORMAT,
    "action": formats.DISCLOSURE_ACTION,
    "details": {"status": "active", "comments": "sent to the borrower"},
}


def _patch(api, transaction_id, payload, **kwargs):
    return api.patch(api.url(f"/partner/v2/transactions/{transaction_id}/response"), json=payload, timeout=10, **kwargs)


def _get(api, transaction_id):
    return api.get(api.url(f"/partner/v2/transactions/{transaction_id}"), timeout=10)


def test_transaction_carries_the_request(api, sandbox):
    transaction_id = host_transaction(sandbox, loan=1, request={"type": "NEW_REQUEST", "options": {"rush": True}})
    answer = _get(api, transaction_id)
    assert answer.status_code == 200
    document = answer.json()
    assert document["id"] == transaction_id
    assert document["status"] == "created"
    assert document["product"] == {
        "id": sandbox.seed.products["address-verification"].service_id,
        "name": "address-verification",
    }
    request = document["request"]
    assert request["type"] == "NEW_REQUEST" and request["options"] == {"rush": True}
    assert request["loan"]["property"]["postalCode"] == "10001"
    assert request["loan"]["property"]["city"] == "Boston"  # the seeded mistake
    assert request["credentials"]["username"] == "lender.demo"
    assert document["created"].endswith("Z")
    assert _get(api, "no-such-transaction").status_code == 404


def test_transaction_of_a_user_without_credentials(api, sandbox):
    transaction_id = host_transaction(sandbox, user="lender.nocreds")
    assert _get(api, transaction_id).json()["request"]["credentials"] == {}


def test_host_refuses_a_request_type_the_product_does_not_take(sandbox):
    from tests.helpers.sandbox import host_origin

    origin = host_origin(sandbox, product="disclosure-delivery")
    answer = requests.post(
        f"{sandbox.host_api}/transactions",
        json={"origin_id": origin["id"], "request": {"type": "ACCEPTED_ORDER"}},
        timeout=10,
    )
    assert answer.status_code == 400
    assert Transaction.objects.count() == 0


def test_patches_merge_and_each_is_processed(api, sandbox):
    transaction_id = host_transaction(sandbox)
    first = _patch(
        api, transaction_id, {"status": "processing", "partnerStatus": "Verifying", "referenceNumber": "AV-1"}
    )
    assert first.status_code == 200, first.text
    [acknowledged] = Event.objects.all()  # every PATCH is a response delivered: processed, with its version
    assert acknowledged.data == {"responseVersion": 1}
    second = _patch(
        api,
        transaction_id,
        {"status": "completed", "partnerStatus": "Done", "loanFormat": formats.LOAN_FORMAT, "loan": LOAN},
    )
    assert second.status_code == 200, second.text
    document = _get(api, transaction_id).json()
    assert document["status"] == "completed"
    assert document["response"] == {
        "status": "completed",
        "partnerStatus": "Done",
        "referenceNumber": "AV-1",
        "loanFormat": formats.LOAN_FORMAT,
        "loan": LOAN,
    }
    event = Event.objects.exclude(pk=acknowledged.pk).get()
    assert event.type == urns.response_processed_event_type() and event.data == {"responseVersion": 2}
    answer = api.get(api.url(f"/partner/v2/transactions/{transaction_id}/events/{event.id}"), timeout=10)
    assert answer.status_code == 200
    assert answer.json()["type"] == urns.response_processed_event_type()
    assert answer.json()["id"] == event.id
    other = host_transaction(sandbox)
    assert api.get(api.url(f"/partner/v2/transactions/{other}/events/{event.id}"), timeout=10).status_code == 404


@pytest.mark.parametrize(
    "payload,field",
    [
        ({"loan": LOAN}, "loanFormat"),
        ({"loanFormat": "application/vnd.plm-1.0.0+json", "loan": LOAN}, "loanFormat"),
        ({"loanFormat": "application/json"}, "loanFormat"),
        ({"status": 3}, "status"),
        ({"respondingParty": "Acme"}, "respondingParty"),
        ({"loan": "x", "loanFormat": formats.LOAN_FORMAT}, "loan"),
        ({"resources": {"id": "x"}}, "resources"),
        ({"resources": [{"name": "no id"}]}, "resources[0]"),
    ],
)
def test_malformed_responses_are_refused(api, sandbox, payload, field):
    transaction_id = host_transaction(sandbox)
    answer = _patch(api, transaction_id, payload)
    assert answer.status_code == 400
    assert field in [problem["field"] for problem in answer.json()["problems"]]
    assert not Response.objects.exists()


def test_response_needs_json(api, sandbox):
    transaction_id = host_transaction(sandbox)
    answer = api.patch(
        api.url(f"/partner/v2/transactions/{transaction_id}/response"),
        data=b"{}",
        headers={"Content-Type": "text/plain"},
        timeout=10,
    )
    assert answer.status_code == 415
    assert _patch(api, transaction_id, ["status"]).status_code == 400
    assert _patch(api, "no-such-transaction", {"status": "processing"}).status_code == 404


def test_loan_fields_outside_the_response_entitlement(api, sandbox):
    transaction_id = host_transaction(sandbox)
    answer = _patch(
        api, transaction_id, {"loanFormat": formats.LOAN_FORMAT, "loan": {**LOAN, "borrower": {"firstName": "X"}}}
    )
    assert answer.status_code == 403
    assert answer.json()["problems"][0]["field"] == "loan.borrower"


@pytest.mark.parametrize(
    "result,field",
    [
        ({**DISCLOSURE, "details": {"status": "active", "date": "2026-01-01"}}, "result.details.date"),
        ({**DISCLOSURE, "details": {"comments": "no status"}}, "result.details.status"),
        ({**DISCLOSURE, "details": {"status": "inactive"}}, "result.details.status"),
        ({**DISCLOSURE, "details": {"status": "Active"}}, "result.details.status"),
        ({**DISCLOSURE, "details": {"status": "active", "comments": 5}}, "result.details.comments"),
        ({**DISCLOSURE, "details": "active"}, "result.details"),
        ({**DISCLOSURE, "format": "application/vnd.disclosure.update-status-2.0.0.json"}, "result.format"),
        ({**DISCLOSURE, "format": "application/json"}, "result.format"),
        ({**DISCLOSURE, "action": "update_disclosure_status"}, "result.action"),
        ({k: v for k, v in DISCLOSURE.items() if k != "action"}, "result.action"),
    ],
)
def test_every_disclosure_details_rule(api, sandbox, result, field):
    transaction_id = host_transaction(sandbox, product="disclosure-delivery")
    answer = _patch(api, transaction_id, {"status": "processing", "result": result})
    assert answer.status_code == 400, answer.text
    assert field in [problem["field"] for problem in answer.json()["problems"]]
    assert not Response.objects.exists() and not Event.objects.exists()


def test_disclosure_action_accepted_with_the_entitlement(api, sandbox):
    transaction_id = host_transaction(sandbox, product="disclosure-delivery")
    payload = {
        "status": "processing",
        "loanFormat": formats.LOAN_FORMAT,
        "partnerStatus": "Disclosure sent",
        "referenceNumber": "DD-1",
        "result": DISCLOSURE,
        "respondingParty": {"name": "Partner", "pointOfContact": {"name": "Ops", "fax": "555-0199"}},
    }
    answer = _patch(api, transaction_id, payload)
    assert answer.status_code == 200, answer.text
    # The action is handled: the response is processed.
    assert Event.objects.get().type == urns.response_processed_event_type()


def test_disclosure_action_without_the_entitlement(api, sandbox):
    # The address verification product holds no action entitlement.
    transaction_id = host_transaction(sandbox)
    answer = _patch(api, transaction_id, {"status": "processing", "result": DISCLOSURE})
    assert answer.status_code == 403
    assert answer.json()["error"] == "not_entitled"
    assert answer.json()["problems"][0]["field"] == "result.action"
    # The documents delivery product loses its entitlement: refused as well.
    disclosure = sandbox.seed.products["disclosure-delivery"]
    entitlements = disclosure.data["entitlements"]
    item = {**entitlements["data"]["transaction"][0]}
    item["response"] = {**item["response"], "results": []}
    api.patch(
        api.url(f"/partner/v2/products/{disclosure.service_id}"),
        json={"entitlements": {"data": {"transaction": [item]}}},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    ).raise_for_status()
    other = host_transaction(sandbox, product="disclosure-delivery")
    assert _patch(api, other, {"status": "processing", "result": DISCLOSURE}).status_code == 403
    assert not Response.objects.exists()


def _uploaded_slot(api, transaction_id, upload=True, name="report.pdf"):
    slot = api.post(
        api.url(f"/partner/v2/transactions/{transaction_id}/response/resources"),
        json=[{"name": name, "mimeType": "application/pdf"}],
        timeout=10,
    ).json()[0]
    if upload:
        requests.put(
            slot["location"],
            data=b"%PDF-1.4",
            timeout=10,
            headers={"Authorization": slot["authorization"], "Content-Type": "application/pdf"},
        ).raise_for_status()
    return slot


def test_resources_must_come_from_this_transaction_and_be_uploaded(api, sandbox):
    transaction_id, other_id = host_transaction(sandbox), host_transaction(sandbox, loan=2)
    foreign = _uploaded_slot(api, other_id)
    pending = _uploaded_slot(api, transaction_id, upload=False)
    done = _uploaded_slot(api, transaction_id, name="done.pdf")
    for resources in [
        [{"id": "made-up", "name": "x.pdf", "mimeType": "application/pdf"}],
        [{"id": foreign["id"], "name": foreign["name"], "mimeType": "application/pdf"}],
        [{"id": pending["id"], "name": pending["name"], "mimeType": "application/pdf"}],
        [{"id": done["id"], "name": "renamed.pdf", "mimeType": "application/pdf"}],
        [{"id": done["id"], "name": done["name"], "mimeType": "image/png"}],
    ]:
        answer = _patch(api, transaction_id, {"resources": resources})
        assert answer.status_code == 409, resources
        assert answer.json()["error"] == "invalid_resources"
    assert not Response.objects.exists()
    _patch(api, transaction_id, {"status": "completed"}).raise_for_status()
    good = [{"id": done["id"], "name": done["name"], "mimeType": "application/pdf"}]
    answer = _patch(api, transaction_id, {"resources": good})
    assert answer.status_code == 200, answer.text
    assert _get(api, transaction_id).json()["response"]["resources"] == good
    # completed, then the attachment: each is processed.
    assert Event.objects.filter(transaction_id=transaction_id).count() == 2
