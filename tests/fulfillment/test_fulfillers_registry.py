"""The fulfiller registry: lookups by key, the error for an unknown key, the choices."""

import pytest

from partner.catalog.fulfiller_keys import fulfiller_choices
from partner.fulfillment.automated.fulfillers import FULFILLERS, Fulfiller, UnknownFulfillerError, fulfiller_for


def test_registry_holds_every_fulfiller_under_its_own_key():
    assert set(FULFILLERS) == {"address_verification", "disclosure_status", "staff_worked", "connected"}
    for key, fulfiller_class in FULFILLERS.items():
        assert issubclass(fulfiller_class, Fulfiller)
        assert fulfiller_class.key == key
        assert fulfiller_class.label


def test_fulfiller_for_returns_a_fresh_instance():
    first = fulfiller_for("address_verification")
    assert isinstance(first, FULFILLERS["address_verification"])
    assert fulfiller_for("address_verification") is not first


@pytest.mark.parametrize("key", ["appraisal", "", None, "ADDRESS_VERIFICATION", ["address_verification"]])
def test_unknown_key_raises_a_clear_error(key):
    with pytest.raises(UnknownFulfillerError) as raised:
        fulfiller_for(key)
    message = str(raised.value)
    assert repr(key) in message
    assert "address_verification" in message and "disclosure_status" in message
    assert raised.value.key == key
    assert isinstance(raised.value, LookupError)


def test_choices_are_key_and_label_pairs_in_registry_order():
    choices = fulfiller_choices()
    assert [key for key, _ in choices] == list(FULFILLERS)
    assert all(isinstance(label, str) and label for _, label in choices)
