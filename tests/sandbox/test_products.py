"""Products: PUT replaces the full object (#9), PATCH is an RFC 7396 merge patch (#10)."""

import copy

from partner.platform import urns
from partner.sandbox.models import Product

MERGE = {"Content-Type": "application/merge-patch+json"}


def _product(api, sandbox, name="address-verification"):
    product = sandbox.seed.products[name]
    return api.url(f"/partner/v2/products/{product.service_id}"), product


def _listed(api, name="address-verification"):
    return next(p for p in api.get(api.url("/partner/v2/products"), timeout=10).json() if p["name"] == name)


def test_listing_shows_every_spec_field(api, sandbox):
    product = _listed(api)
    for field in (
        "id",
        "partnerId",
        "name",
        "listingName",
        "requestTypes",
        "environment",
        "status",
        "interfaceUrl",
        "adminInterfaceUrl",
        "integrationType",
        "credentials",
        "credential",
        "tags",
        "extensionLimit",
        "entitlements",
        "webhooks",
        "created",
        "createdBy",
    ):
        assert field in product, field
    assert {c["id"] for c in product["credentials"]} == {"username", "password", "companyCode"}
    password = next(c for c in product["credentials"] if c["id"] == "password")
    assert password["secret"] is True and password["minimum"] == 8 and password["maximum"] == 30
    assert "signing" not in str(product).lower()


def test_merge_patch_sets_access_and_leaves_the_rest(api, sandbox):
    url, product = _product(api, sandbox)
    before = _listed(api)
    allow = [urns.instance_urn("BE11223344"), urns.instance_urn("TEBE99887766")]
    answer = api.patch(url, json={"entitlements": {"access": {"allow": allow, "deny": []}}}, headers=MERGE, timeout=10)
    assert answer.status_code == 200, answer.text
    after = answer.json()
    assert after["entitlements"]["access"] == {"allow": allow, "deny": []}
    expected = copy.deepcopy(before)
    expected["entitlements"]["access"] = {"allow": allow, "deny": []}
    assert after == expected
    assert _listed(api) == expected


def test_merge_patch_null_removes_a_member(api, sandbox):
    url, _ = _product(api, sandbox)
    answer = api.patch(
        url, json={"extensionLimit": None, "tags": {"categories": ["APPRAISAL", "TITLE"]}}, headers=MERGE, timeout=10
    )
    assert answer.status_code == 200
    document = answer.json()
    assert "extensionLimit" not in document
    assert document["tags"]["categories"] == ["APPRAISAL", "TITLE"]
    assert document["tags"]["workflows"] == ["automated", "interactive"]


def test_merge_patch_needs_its_content_type(api, sandbox):
    url, product = _product(api, sandbox)
    answer = api.patch(url, json={"listingName": "Other"}, timeout=10)
    assert answer.status_code == 415
    assert answer.json()["error"] == "unsupported_media_type"
    assert Product.objects.get(pk=product.pk).data["listingName"] == "Address Verification"


def test_patch_refusals_change_nothing(api, sandbox):
    url, product = _product(api, sandbox)
    before = Product.objects.get(pk=product.pk).data
    for patch in [
        {"id": "another-id"},
        {"partnerId": "someone-else"},
        {"entitlements": {"access": {"allow": ["BE11223344"]}}},
        {"webhooks": [{"url": "not a url", "resource": urns.transaction_resource_type()}]},
        {"webhooks": [{"url": "https://example.com/hook", "resource": "urn:other"}]},
        {"requestTypes": "NEW_REQUEST"},
        {"listingName": None},
        {"credentials": [{"id": "x", "minimum": "4"}]},
        ["not", "an", "object"],
    ]:
        answer = api.patch(url, json=patch, headers=MERGE, timeout=10)
        assert answer.status_code == 400, patch
        assert answer.json()["problems"] or answer.json()["message"]
    assert Product.objects.get(pk=product.pk).data == before
    bad_json = api.patch(url, data=b"{not json", headers=MERGE, timeout=10)
    assert bad_json.status_code == 400 and bad_json.json()["error"] == "invalid_json"


def test_put_replaces_the_full_object(api, sandbox):
    url, product = _product(api, sandbox)
    document = _listed(api)
    document.pop("tags")
    document["listingName"] = "Address Verification Pro"
    document["webhooks"] = [
        {
            "subscriptionId": "s1",
            "url": "https://partner.example.com/v1/webhooks",
            "events": ["created"],
            "resource": urns.transaction_resource_type(),
        }
    ]
    document["created"] = "2020-01-01T00:00:00Z"  # managed: kept as the service has it
    document.pop("createdBy")
    answer = api.put(url, json=document, timeout=10)
    assert answer.status_code == 200, answer.text
    stored = answer.json()
    assert "tags" not in stored
    assert stored["listingName"] == "Address Verification Pro"
    assert stored["webhooks"] == document["webhooks"]
    assert stored["createdBy"] == product.data["createdBy"]
    assert stored["id"] == product.service_id
    assert _listed(api) == stored


def test_put_refusals(api, sandbox):
    url, product = _product(api, sandbox)
    document = _listed(api)
    assert api.put(url, data=b"{}", headers={"Content-Type": "text/plain"}, timeout=10).status_code == 415
    assert api.put(url, json={**document, "id": "other"}, timeout=10).status_code == 400
    missing_name = {k: v for k, v in document.items() if k != "name"}
    assert api.put(url, json=missing_name, timeout=10).status_code == 400
    taken = api.put(url, json={**document, "name": "disclosure-delivery"}, timeout=10)
    assert taken.status_code == 409
    unknown = api.put(api.url("/partner/v2/products/no-such-product"), json=document, timeout=10)
    assert unknown.status_code == 404
    assert Product.objects.get(pk=product.pk).data == product.data


def test_a_subscription_to_an_event_type_the_service_never_sends_is_refused(api, sandbox):
    url, product = _product(api, sandbox)
    document = _listed(api)
    subscription = {"url": "https://partner.example.com/v1/webhooks", "resource": urns.transaction_resource_type()}
    document["webhooks"] = [{**subscription, "events": ["created", "exploded"]}]
    refused = api.put(url, json=document, timeout=10)
    assert refused.status_code == 400, refused.text
    (problem,) = refused.json()["problems"]
    assert problem["field"] == "webhooks[0].events"
    assert problem["message"].startswith('"exploded" is not an event type the service sends')
    assert Product.objects.get(pk=product.pk).data == product.data
    document["webhooks"] = [{**subscription, "events": ["created"]}]
    assert api.put(url, json=document, timeout=10).status_code == 200
