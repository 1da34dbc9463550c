"""The client against the sandbox over real HTTP (pytest-django's live server): every endpoint."""

import io
import json

import pytest
import requests

from partner.platform import client, urns
from partner.platform.errors import (
    ServiceAuthenticationError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from partner.platform.formats import DISCLOSURE_ACTION, DISCLOSURE_FORMAT, LOAN_FORMAT
from partner.sandbox.models import Event, UploadSlot
from partner.sandbox.origins import origin_create, origin_expire
from partner.sandbox.transactions import transaction_create
from partner.sandbox.webhooks import webhook_deliveries_wait

pytestmark = pytest.mark.django_db

ADDRESS = "address-verification"
DISCLOSURE = "disclosure-delivery"


def new_transaction(sandbox, *, product=ADDRESS, user="lender.demo", loan=0, webhook=False):
    return transaction_create(
        product=sandbox.seed.products[product],
        user=sandbox.seed.users[user],
        loan=sandbox.seed.loans[loan],
        send_webhook=webhook,
    )


def test_get_origin_with_the_partner_access_token(sandbox, service_calls):
    origin = origin_create(
        user=sandbox.seed.users["lender.demo"], loan=sandbox.seed.loans[0], product=sandbox.seed.products[ADDRESS]
    )
    found = client.get_origin(origin.origin_id, origin.partner_access_token)
    assert found.id == origin.origin_id
    assert found.entity_id == urns.loan_urn("BE11223344", sandbox.seed.loans[0].guid)
    assert found.loan_format == LOAN_FORMAT
    assert found.product["name"] == ADDRESS
    assert found.credentials["username"] == "lender.demo"
    assert found.environment == "sandbox"
    assert found.loan.get("property")
    assert "demo-password-1" not in repr(found)  # credentials stay out of logs
    assert service_calls[-1]["status"] == 200


def test_get_origin_refused_with_a_wrong_or_expired_token(sandbox):
    origin = origin_create(
        user=sandbox.seed.users["lender.nocreds"], loan=sandbox.seed.loans[0], product=sandbox.seed.products[ADDRESS]
    )
    assert client.get_origin(origin.origin_id, origin.partner_access_token).credentials == {}
    with pytest.raises(ServiceAuthenticationError):
        client.get_origin(origin.origin_id, "not-the-partner-access-token")
    origin_expire(origin=origin)
    with pytest.raises(ServiceAuthenticationError) as caught:
        client.get_origin(origin.origin_id, origin.partner_access_token)
    assert origin.partner_access_token not in str(caught.value)


def test_get_transaction(sandbox):
    created = new_transaction(sandbox)
    found = client.get_transaction(created.id)
    assert found.id == created.id
    assert found.request["type"] == "NEW_REQUEST"
    assert found.request["loan"]["property"]
    assert found.request["credentials"]["companyCode"] == "DEMO01"
    with pytest.raises(ServiceNotFoundError):
        client.get_transaction("no-such-transaction")


def test_response_slots_upload_and_processed_event(sandbox, tmp_path):
    created = new_transaction(sandbox)
    answer = client.patch_response(
        created.id,
        {"status": "processing", "loanFormat": LOAN_FORMAT, "partnerStatus": "Validating", "referenceNumber": "REF-1"},
    )
    assert isinstance(answer, dict)

    slots = client.request_upload_slots(
        created.id,
        [{"name": "report.pdf", "mimeType": "application/pdf"}, {"name": "data.json", "mimeType": "application/json"}],
    )
    assert [(s.name, s.mime_type) for s in slots] == [
        ("report.pdf", "application/pdf"),
        ("data.json", "application/json"),
    ]
    pdf = tmp_path / "report.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 400)
    with pdf.open("rb") as handle:
        client.upload_resource(slots[0], handle)  # streamed from the file
    client.upload_resource(slots[1], b'{"ok": true}')
    stored = {slot.id: bytes(slot.content) for slot in UploadSlot.objects.filter(transaction_id=created.id)}
    assert stored == {slots[0].id: pdf.read_bytes(), slots[1].id: b'{"ok": true}'}

    client.patch_response(
        created.id, {"status": "completed", "loanFormat": LOAN_FORMAT, "resources": [s.resource() for s in slots]}
    )
    assert webhook_deliveries_wait(20)
    notifications = [json.loads(s.body) for s in sandbox.receiver.requests_to("POST", "/v1/webhooks")]
    # One processed event per PATCH: the first (processing) and the second (completed, with resources).
    first, second = [n for n in notifications if n["meta"]["resourceType"] == urns.event_resource_type()]
    ref = client.resource_ref_parse(second["meta"]["resourceRef"])
    assert (ref.kind, ref.transaction_id) == ("event", created.id)
    event = client.get_event(ref.transaction_id, ref.event_id)
    assert event.type == urns.response_processed_event_type()
    assert event.raw["details"] == {"responseVersion": 2}
    assert event.id == Event.objects.get(transaction_id=created.id, data__responseVersion=2).id


def test_the_one_time_upload_authorization_is_spent(sandbox):
    created = new_transaction(sandbox)
    [slot] = client.request_upload_slots(created.id, [{"name": "a.txt", "mimeType": "text/plain"}])
    client.upload_resource(slot, io.BytesIO(b"first"))
    with pytest.raises(ServiceValidationError) as caught:
        client.upload_resource(slot, b"second")
    assert caught.value.status == 409
    assert slot.authorization not in str(caught.value)


def test_rejected_responses_carry_the_sandbox_problems(sandbox):
    created = new_transaction(sandbox)
    with pytest.raises(ServiceValidationError) as caught:
        client.patch_response(created.id, {"status": "processing", "loanFormat": "application/json"})
    assert caught.value.status == 400 and caught.value.body["problems"]
    with pytest.raises(ServiceValidationError) as caught:
        client.patch_response(
            created.id,
            {
                "status": "completed",
                "loanFormat": LOAN_FORMAT,
                "resources": [{"id": "never-requested", "name": "x", "mimeType": "a/b"}],
            },
        )
    assert caught.value.status == 409


def test_disclosure_status_update_through_the_response(sandbox):
    created = new_transaction(sandbox, product=DISCLOSURE)
    client.patch_response(
        created.id,
        {
            "status": "processing",
            "loanFormat": LOAN_FORMAT,
            "result": {
                "format": DISCLOSURE_FORMAT,
                "action": DISCLOSURE_ACTION,
                "details": {"status": "active", "comments": "delivered"},
            },
        },
    )
    with pytest.raises(ServiceValidationError):
        client.patch_response(
            created.id,
            {
                "status": "processing",
                "loanFormat": LOAN_FORMAT,
                "result": {"format": DISCLOSURE_FORMAT, "action": DISCLOSURE_ACTION, "details": {"status": "closed"}},
            },
        )
    elsewhere = new_transaction(sandbox, product=ADDRESS)  # no action entitlement: the sandbox answers 403
    with pytest.raises(ServiceAuthenticationError) as caught:
        client.patch_response(
            elsewhere.id,
            {
                "status": "processing",
                "loanFormat": LOAN_FORMAT,
                "result": {"format": DISCLOSURE_FORMAT, "action": DISCLOSURE_ACTION, "details": {"status": "active"}},
            },
        )
    assert caught.value.status == 403 and "not_entitled" in caught.value.excerpt and not caught.value.transient


def test_products_list_replace_and_merge_patch(sandbox, service_calls):
    products = list(client.iter_products(page_size=1))
    assert sorted(p.name for p in products) == [ADDRESS, "appraisal", DISCLOSURE]
    assert len([c for c in service_calls if "/partner/v2/products?" in c["url"]]) == 3  # stops exactly

    product = next(p for p in products if p.name == ADDRESS)
    assert product.id and product.raw["id"] == product.id  # the whole object travels in .raw
    replaced = client.replace_product(product.id, {**product.raw, "listingName": "Address check (renamed)"})
    assert replaced.listing_name == "Address check (renamed)"

    allow = [*product.raw["entitlements"]["access"]["allow"], urns.instance_urn("TEST998877")]
    patched = client.patch_product(product.id, {"entitlements": {"access": {"allow": allow, "deny": []}}})
    assert patched.raw["entitlements"]["access"]["allow"] == allow
    assert patched.listing_name == "Address check (renamed)"  # a merge patch keeps what it does not name
    assert patched.raw["entitlements"]["data"] == product.raw["entitlements"]["data"]
    page = client.list_products_page(start=0, limit=50)
    assert page.total == 3  # the three demo products
    assert next(p for p in page.items if p.id == product.id).raw["entitlements"]["access"]["allow"] == allow
    with pytest.raises(ServiceNotFoundError):
        client.patch_product("no-such-product", {"listingName": "x"})


def test_the_upload_never_carries_the_bearer_token(sandbox, monkeypatch):
    sent = []
    original = requests.adapters.HTTPAdapter.send

    def spy(self, request, *args, **kwargs):  # what goes on the wire
        sent.append((request.method, request.url, dict(request.headers)))
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", spy)
    created = new_transaction(sandbox)
    [slot] = client.request_upload_slots(created.id, [{"name": "r.pdf", "mimeType": "application/pdf"}])
    client.upload_resource(slot, b"%PDF")
    bearer = next(h["Authorization"] for m, u, h in sent if "/response/resources" in u)
    assert bearer.startswith("Bearer ")
    [(method, url, headers)] = [s for s in sent if s[1] == slot.location]
    assert method == "PUT"
    assert headers["Authorization"] == slot.authorization and headers["Content-Type"] == "application/pdf"
    assert bearer.split()[1] not in json.dumps(headers)
