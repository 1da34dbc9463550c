"""The service's URNs (partner/platform/urns.py): the spec's by default, any platform's from the three
settings, and the rule of their words; what matches a URN follows the same settings."""

import pytest

from partner.catalog import validation
from partner.inbox.dispatch import handler_for
from partner.platform import urns
from partner.sandbox import documents
from tests.helpers.urn_words import OTHER_WORDS


@pytest.fixture
def acme(settings):
    """Other words than the spec's in each of the three places, as a real platform has."""
    for name, value in OTHER_WORDS.items():
        setattr(settings, name, value)


def every_urn() -> dict[str, str]:
    return {
        "transaction": urns.transaction_resource_type(),
        "event": urns.event_resource_type(),
        "processed": urns.response_processed_event_type(),
        "instance": urns.instance_urn("BE11223344"),
        "loan": urns.loan_urn("BE11223344", "guid-1"),
        "loan kind": urns.loan_entity_type(),
        "creator": urns.partner_user_urn("P-1", "admin"),
    }


def test_the_defaults_are_the_specs_urns():
    assert every_urn() == {
        "transaction": "urn:svc:platform:transaction",
        "event": "urn:svc:platform:transaction:event",
        "processed": "urn:svc:platform:transaction:response:processed",
        "instance": "urn:svc:host:BE11223344",
        "loan": "urn:svc:host:BE11223344:loan:guid-1",
        "loan kind": "urn:svc:host:loan",
        "creator": "urn:svc:partner:P-1:user:admin",
    }
    assert urns.webhook_resource_types() == ["urn:svc:platform:transaction", "urn:svc:platform:transaction:event"]


def test_every_urn_takes_the_words_of_the_settings(acme):
    assert every_urn() == {
        "transaction": "urn:acme:lending:transaction",
        "event": "urn:acme:lending:transaction:event",
        "processed": "urn:acme:lending:transaction:response:processed",
        "instance": "urn:acme:desk:BE11223344",
        "loan": "urn:acme:desk:BE11223344:loan:guid-1",
        "loan kind": "urn:acme:desk:loan",
        "creator": "urn:acme:partner:P-1:user:admin",
    }
    assert urns.webhook_resource_types() == ["urn:acme:lending:transaction", "urn:acme:lending:transaction:event"]


def test_what_matches_a_urn_follows_the_words(acme):
    # The inbox's dispatch: the platform's resource types are handled, the spec's no longer.
    assert handler_for("urn:acme:lending:transaction", "created") is not None
    assert handler_for("urn:acme:lending:transaction:event", "created") is not None
    assert handler_for("urn:svc:platform:transaction", "created") is None
    # The catalog's rules of a product: its instances and its webhook subscriptions.
    assert validation.instance_urn_problem("urn:acme:desk:BE11223344") is None
    assert "not a lender instance URN (form urn:acme:desk:<instance id>)" in validation.instance_urn_problem(
        "urn:svc:host:BE11223344"
    )
    subscription = {"url": "https://partner.example/v1/webhooks", "events": ["created"]}
    assert validation.webhooks_problems([{**subscription, "resource": "urn:acme:lending:transaction"}]) == []
    assert validation.webhooks_problems([{**subscription, "resource": "urn:svc:platform:transaction"}])
    # The sandbox checks a product's document as the service does, with the same words.
    named = {"name": "address-verification", "listingName": "Address verification"}

    def sandbox_refuses(**fields) -> bool:
        return bool(documents.product_problems({**named, **fields}))

    assert not sandbox_refuses(entitlements={"access": {"allow": ["urn:acme:desk:BE11223344"]}})
    assert sandbox_refuses(entitlements={"access": {"allow": ["urn:svc:host:BE11223344"]}})
    assert not sandbox_refuses(webhooks=[{**subscription, "resource": "urn:acme:lending:transaction"}])
    assert sandbox_refuses(webhooks=[{**subscription, "resource": "urn:svc:platform:transaction"}])


@pytest.mark.parametrize("word", ["platform", "host", "epc", "lending-desk", "v2", "0"])
def test_a_word_is_lower_case_letters_digits_and_hyphens(word):
    assert urns.word_problem(word) is None
    assert urns.prefix_problem(f"urn:{word}") is None


@pytest.mark.parametrize("word", ["", "Platform", "HOST", "lending desk", "a:b", "a_b", "a.b", "é", "host\n", " host"])
def test_anything_else_is_not_a_word(word):
    assert urns.word_problem(word) == "must be one word of lower-case letters, digits and hyphens ([a-z0-9-]+)"
    assert urns.prefix_problem(f"urn:{word}") is not None


@pytest.mark.parametrize("prefix", ["", "urn", "urn:", "svc", "URN:svc", "urn:svc:", "urn:svc:platform", "x:svc"])
def test_the_prefix_is_urn_and_one_word(prefix):
    assert urns.prefix_problem(prefix) == (
        "must be urn: and one word of lower-case letters, digits and hyphens ([a-z0-9-]+), like urn:svc"
    )
