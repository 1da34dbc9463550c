"""Address verification fulfiller: ZIP lookup in the zipcodes data, corrections, refusals, response shape."""

import re

import pytest

from partner.fulfillment.automated.fulfillers import FulfillmentRefused, fulfiller_for
from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller
from partner.platform.formats import LOAN_FORMAT

SF = {
    "streetAddress": "1355 Market Street",
    "city": "San Francisco",
    "state": "CA",
    "postalCode": "94103",
    "county": "San Francisco County",
    "loanPurposeType": "Purchase",
    "propertyUsageType": "PrimaryResidence",
}


def fulfill(prop=None, *, request=None, transaction_id="txn-0001"):
    if request is None:
        request = {"type": "NEW_REQUEST", "loan": {"property": prop}}
    return AddressVerificationFulfiller().fulfill(transaction_id=transaction_id, request=request, product={})


def test_matching_address_is_verified_unchanged():
    result = fulfill(dict(SF))
    response = result.response
    assert response["status"] == "completed"
    assert response["partnerStatus"] == "Address verified"
    assert response["loanFormat"] == LOAN_FORMAT
    assert response["loan"] == {"property": SF}
    assert "resources" not in response


def test_comparison_ignores_case_and_spacing():
    prop = dict(SF, city="  san   FRANCISCO ", state="ca", county="SAN FRANCISCO county")
    result = fulfill(prop)
    assert result.response["partnerStatus"] == "Address verified"
    # The county comes back written one way, the data source's; the rest as received.
    assert result.response["loan"]["property"] == dict(prop, county="San Francisco County")


def test_wrong_city_is_corrected():
    result = fulfill(dict(SF, city="Oakland"))
    assert result.response["partnerStatus"] == "Address corrected: city"
    assert result.response["loan"]["property"] == dict(SF)


def test_wrong_county_is_corrected():
    result = fulfill(dict(SF, county="Alameda County"))
    assert result.response["partnerStatus"] == "Address corrected: county"
    assert result.response["loan"]["property"]["county"] == "San Francisco County"


def test_wrong_state_is_corrected():
    result = fulfill(dict(SF, state="NV"))
    assert result.response["partnerStatus"] == "Address corrected: state"
    assert result.response["loan"]["property"]["state"] == "CA"


def test_several_corrections_are_listed_in_order():
    result = fulfill(dict(SF, city="Oakland", state="NV", county="Alameda County"))
    assert result.response["partnerStatus"] == "Address corrected: city, state, county"
    assert result.response["loan"]["property"] == SF


def test_missing_fields_are_added():
    prop = {"streetAddress": "1 Main St", "postalCode": "94103"}
    result = fulfill(prop)
    assert result.response["partnerStatus"] == "Address corrected: city, state, county"
    assert result.response["loan"]["property"] == {
        "streetAddress": "1 Main St",
        "postalCode": "94103",
        "city": "San Francisco",
        "state": "CA",
        "county": "San Francisco County",
    }


def test_received_property_is_not_mutated():
    prop = dict(SF, city="Oakland")
    fulfill(prop)
    assert prop["city"] == "Oakland"


@pytest.mark.parametrize("postal_code", ["94103-1234", "941031234", " 94103 "])
def test_zip_plus_four_and_spacing_are_accepted(postal_code):
    result = fulfill(dict(SF, postalCode=postal_code, city="Oakland"))
    assert result.response["partnerStatus"] == "Address corrected: city"
    # The postal code is ours to check, not to rewrite.
    assert result.response["loan"]["property"]["postalCode"] == postal_code


def test_county_without_its_suffix_matches():
    prop = {"city": "New Orleans", "state": "LA", "postalCode": "70112", "county": "Orleans"}
    response = fulfill(prop).response
    assert response["partnerStatus"] == "Address verified"
    assert response["loan"]["property"]["county"] == "Orleans Parish"
    prop = {"city": "Anchorage", "state": "AK", "postalCode": "99501", "county": "anchorage"}
    response = fulfill(prop).response
    assert response["partnerStatus"] == "Address verified"
    assert response["loan"]["property"]["county"] == "Anchorage Municipality"


def test_a_different_county_with_the_same_stem_is_corrected():
    prop = {"city": "New Orleans", "state": "LA", "postalCode": "70112", "county": "Orleans County"}
    result = fulfill(prop)
    assert result.response["partnerStatus"] == "Address corrected: county"
    assert result.response["loan"]["property"]["county"] == "Orleans Parish"


def test_acceptable_alternative_city_name_is_not_corrected():
    prop = {"city": "Ramey", "state": "PR", "postalCode": "00603", "county": "Aguadilla Municipio"}
    assert fulfill(prop).response["partnerStatus"] == "Address verified"


def test_county_is_left_alone_when_the_data_has_none():
    # 00604 is a PO box ZIP code without a county in the data source.
    prop = {"city": "Aguadilla", "state": "PR", "postalCode": "00604", "county": "Somewhere"}
    result = fulfill(prop)
    assert result.response["partnerStatus"] == "Address verified"
    assert result.response["loan"]["property"]["county"] == "Somewhere"


def test_unknown_zip_is_refused():
    with pytest.raises(FulfillmentRefused) as refused:
        fulfill(dict(SF, postalCode="00000"))
    # Bad loan data: the lender should read why in partnerStatus.
    assert refused.value.tell_lender is True
    assert "00000" in refused.value.message
    assert "not a known US ZIP code" in refused.value.message


@pytest.mark.parametrize("postal_code", ["ABCDE", "9410", "94103-12", "94103-123456", "SW1A 1AA"])
def test_malformed_zip_is_refused(postal_code):
    with pytest.raises(FulfillmentRefused, match="is not a US ZIP code"):
        fulfill(dict(SF, postalCode=postal_code))


@pytest.mark.parametrize("postal_code", [None, "", "   "])
def test_missing_zip_is_refused(postal_code):
    prop = dict(SF, postalCode=postal_code)
    with pytest.raises(FulfillmentRefused, match="no ZIP code"):
        fulfill(prop)
    prop.pop("postalCode")
    with pytest.raises(FulfillmentRefused, match="no ZIP code"):
        fulfill(prop)


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({}, "no loan data"),
        ({"loan": None}, "no loan data"),
        ({"loan": "x"}, "no loan data"),
        ({"loan": {}}, "no subject property"),
        ({"loan": {"property": None}}, "no subject property"),
        ({"loan": {"property": {}}}, "no subject property"),
        ({"loan": {"property": ["94103"]}}, "no subject property"),
        ({"loan": {"property": dict(SF, city=["San Francisco"])}}, "city is not text"),
        ({"loan": {"property": dict(SF, postalCode=94103)}}, "postalCode is not text"),
    ],
)
def test_missing_or_malformed_property_is_refused(request_, message):
    with pytest.raises(FulfillmentRefused, match=message):
        fulfill(request=request_)


def test_reference_number_is_deterministic_per_transaction():
    first = fulfill(dict(SF), transaction_id="txn-A").response["referenceNumber"]
    again = fulfill(dict(SF, city="Oakland"), transaction_id="txn-A").response["referenceNumber"]
    other = fulfill(dict(SF), transaction_id="txn-B").response["referenceNumber"]
    assert re.fullmatch(r"AV-[0-9A-F]{10}", first)
    assert first == again
    assert first != other


def test_responding_party_names_company_and_point_of_contact():
    party = fulfill(dict(SF)).response["respondingParty"]
    assert {"name", "address", "city", "state", "postalCode", "pointOfContact"} <= set(party)
    assert all(isinstance(party[k], str) and party[k] for k in ("name", "address", "city", "state", "postalCode"))
    contact = party["pointOfContact"]
    assert {"name", "role", "phone", "email"} <= set(contact)
    assert all(contact[k] for k in ("name", "role", "phone", "email"))


def test_one_pdf_report_is_attached():
    result = fulfill(dict(SF, city="Oakland"), transaction_id="txn-pdf")
    (attachment,) = result.attachments
    reference = result.response["referenceNumber"]
    assert attachment.name == f"address-verification-{reference}.pdf"
    assert attachment.mime_type == "application/pdf"
    assert attachment.content.startswith(b"%PDF-")
    assert attachment.content.rstrip().endswith(b"%%EOF")


def test_registry_returns_this_fulfiller():
    assert isinstance(fulfiller_for("address_verification"), AddressVerificationFulfiller)


@pytest.mark.parametrize("options", [None, "x", {"comments": 5}, {"comments": "Rush order"}])
def test_order_options_never_change_the_answer(options):
    request = {"loan": {"property": dict(SF, city="Oakland")}}
    if options is not None:
        request["options"] = options
    assert fulfill(request=request).response == fulfill(dict(SF, city="Oakland")).response


def test_findings_say_what_changed_field_by_field_in_the_lenders_words():
    """What the lender's panel shows: every field before and after, labelled, enumerations in words."""
    findings = {f["field"]: f for f in fulfill(dict(SF, city="Oakland")).findings}
    assert findings["city"] == {
        "field": "city",
        "label": "City",
        "before": "Oakland",
        "after": "San Francisco",
        "changed": True,
    }
    assert findings["postalCode"]["label"] == "ZIP code" and findings["postalCode"]["changed"] is False
    assert findings["propertyUsageType"]["before"] == "Primary residence"
    assert list(findings)[:3] == ["streetAddress", "city", "state"]
