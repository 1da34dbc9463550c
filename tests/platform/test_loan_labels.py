"""The loan vocabulary in words: field labels, enumeration values, plain text left alone."""

import pytest

from partner.platform.loan_labels import PROPERTY_FIELD_LABELS, field_label, property_value, value_label


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("PrimaryResidence", "Primary residence"),
        ("SecondHome", "Second home"),
        ("Investment", "Investment property"),
        ("Investor", "Investment property"),
        ("Purchase", "Purchase"),
        ("Refinance", "Refinance"),
        ("CashOutRefinance", "Cash-out refinance"),
        ("Cash-Out Refinance", "Cash-out refinance"),
        ("NoCash-Out Refinance", "No cash-out refinance"),
        ("NoCashOutRefinance", "No cash-out refinance"),
        ("PRIMARY_RESIDENCE", "Primary residence"),
        ("ConstructionToPermanent", "Construction to permanent"),
        # Values without a wording of their own are split into words, acronyms kept.
        ("BridgeLoanPayoff", "Bridge loan payoff"),
        ("FHAStreamline", "FHA streamline"),
    ],
)
def test_enumeration_values_in_words(value, words):
    assert value_label(value) == words


@pytest.mark.parametrize(
    "value", ["streetAddress", "1355 Market Street", "San Francisco", "CA", "94103-0001", "", None, 42]
)
def test_field_names_and_plain_text_are_left_alone(value):
    assert value_label(value) == value


def test_field_labels():
    assert list(PROPERTY_FIELD_LABELS)[:4] == ["streetAddress", "city", "state", "postalCode"]
    assert field_label("postalCode") == "ZIP code"
    assert field_label("propertyUsageType") == "Property usage"
    assert field_label("parcelNumber") == "parcelNumber"


def test_only_enumeration_fields_are_put_in_words():
    assert property_value("propertyUsageType", "PrimaryResidence") == "Primary residence"
    # A place name in CamelCase is a name, not an enumeration value.
    assert property_value("city", "McAllen") == "McAllen"
    assert property_value("county", "DeKalb County") == "DeKalb County"
