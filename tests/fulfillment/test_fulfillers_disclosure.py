"""Disclosure status fulfiller: the UPDATE_DISCLOSURE_STATUS result, entitlement and request checks."""

import copy
import re

import pytest

from partner.fulfillment.automated.fulfillers import FulfillmentRefused, fulfiller_for
from partner.fulfillment.automated.fulfillers.disclosure_status import DisclosureStatusFulfiller
from partner.platform.formats import DISCLOSURE_ACTION, DISCLOSURE_FORMAT, LOAN_FORMAT, disclosure_result_violations

ENTITLED = {
    "id": "prod-dd",
    "name": "disclosure-delivery",
    "entitlements": {
        "data": {
            "transaction": [
                {
                    "requestTypes": ["NEW_REQUEST"],
                    "request": {},
                    "response": {"results": [{"action": DISCLOSURE_ACTION, "formats": [DISCLOSURE_FORMAT]}]},
                }
            ]
        }
    },
}


def fulfill(request=None, product=ENTITLED, transaction_id="txn-d-1"):
    if request is None:
        request = {"type": "NEW_REQUEST", "options": {}, "loan": {}}
    return DisclosureStatusFulfiller().fulfill(transaction_id=transaction_id, request=request, product=product)


def test_entitled_product_answers_with_the_action_result():
    result = fulfill()
    response = result.response
    assert result.attachments == []
    assert response["status"] == "processing"
    assert response["loanFormat"] == LOAN_FORMAT
    assert response["result"] == {
        "format": DISCLOSURE_FORMAT,
        "action": DISCLOSURE_ACTION,
        "details": {"status": "active"},
    }
    assert disclosure_result_violations(response["result"]) == []
    assert response["partnerStatus"]
    assert re.fullmatch(r"DS-[0-9A-F]{10}", response["referenceNumber"])
    assert "resources" not in response


def test_responding_party_has_a_fax():
    contact = fulfill().response["respondingParty"]["pointOfContact"]
    assert all(contact[k] for k in ("name", "role", "phone", "fax", "email"))


def test_reference_number_is_deterministic():
    assert (
        fulfill(transaction_id="a").response["referenceNumber"]
        == fulfill(transaction_id="a").response["referenceNumber"]
    )
    assert (
        fulfill(transaction_id="a").response["referenceNumber"]
        != fulfill(transaction_id="b").response["referenceNumber"]
    )


def test_comments_are_passed_on():
    result = fulfill({"type": "NEW_REQUEST", "options": {"comments": "Sent to borrower by e-mail"}})
    assert result.response["result"]["details"] == {"status": "active", "comments": "Sent to borrower by e-mail"}


@pytest.mark.parametrize("options", [None, {}, {"comments": None}, {"comments": "   "}, {"other": "x"}])
def test_absent_or_empty_comments_are_left_out(options):
    request = {"type": "NEW_REQUEST"}
    if options is not None:
        request["options"] = options
    assert fulfill(request).response["result"]["details"] == {"status": "active"}


@pytest.mark.parametrize("comments", [42, ["a"], {"text": "a"}, True])
def test_non_string_comments_are_refused(comments):
    with pytest.raises(FulfillmentRefused, match="comments") as refused:
        fulfill({"type": "NEW_REQUEST", "options": {"comments": comments}})
    assert refused.value.tell_lender is True


def test_options_that_are_not_an_object_are_refused():
    with pytest.raises(FulfillmentRefused, match="options"):
        fulfill({"type": "NEW_REQUEST", "options": "comments"})


def test_missing_request_type_means_new_request():
    assert fulfill({"options": {}}).response["result"]["action"] == DISCLOSURE_ACTION


def test_product_without_the_entitlement_is_refused():
    product = {"id": "prod-av", "name": "address-verification", "entitlements": {"data": {"transaction": []}}}
    with pytest.raises(FulfillmentRefused) as refused:
        fulfill(product=product)
    reason = refused.value.message
    # Our configuration, not the lender's data: nothing at all is sent for it.
    assert refused.value.tell_lender is False
    assert "address-verification" in reason
    assert DISCLOSURE_ACTION in reason
    assert "NEW_REQUEST" in reason


@pytest.mark.parametrize("product", [{}, None, {"entitlements": None}])
def test_product_without_entitlements_is_refused(product):
    with pytest.raises(FulfillmentRefused, match="does not hold"):
        fulfill(product=product)


def test_entitlement_for_another_request_type_is_refused():
    with pytest.raises(FulfillmentRefused, match="ACCEPTED_ORDER"):
        fulfill({"type": "ACCEPTED_ORDER", "options": {}})


def test_entitlement_in_another_format_is_refused():
    product = copy.deepcopy(ENTITLED)
    product["entitlements"]["data"]["transaction"][0]["response"]["results"][0]["formats"] = [
        "application/vnd.disclosure.update-status-2.0.0.json"
    ]
    with pytest.raises(FulfillmentRefused, match="does not hold"):
        fulfill(product=product)


def test_entitlement_for_the_request_type_among_others_is_found():
    product = copy.deepcopy(ENTITLED)
    product["entitlements"]["data"]["transaction"].insert(0, {"requestTypes": ["NEW_REQUEST"], "response": {}})
    product["entitlements"]["data"]["transaction"][1]["requestTypes"] = ["NEW_REQUEST", "ACCEPTED_ORDER"]
    assert fulfill({"type": "ACCEPTED_ORDER"}, product=product).response["result"]["details"]["status"] == "active"


@pytest.mark.parametrize("request_type", [["NEW_REQUEST"], 7])
def test_request_type_that_is_not_text_is_refused(request_type):
    with pytest.raises(FulfillmentRefused, match="request type"):
        fulfill({"type": request_type})


def test_registry_returns_this_fulfiller():
    assert isinstance(fulfiller_for("disclosure_status"), DisclosureStatusFulfiller)
