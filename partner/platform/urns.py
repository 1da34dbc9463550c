"""Every URN of the service that we build or match, from three settings, and the rule of their words.

The spec writes them with neutral words, `urn:svc:platform:…` and `urn:svc:host:…`; a real platform
has words of its own in each of the three places (the prefix, the word of its own resources, the word
of the host application's), named in its onboarding documents. So each is a setting
(config/settings/platform.py; docs/deployment.md says where to find them):

    SVC_URN_PREFIX    (`urn:svc`)    <prefix>
    SVC_URN_PLATFORM  (`platform`)   <prefix>:<platform>:transaction          resource type: a new transaction
                                     <prefix>:<platform>:transaction:event    resource type: a response callback
                                     <prefix>:<platform>:transaction:response:processed   an event's type
    SVC_URN_HOST      (`host`)       <prefix>:<host>:<instance id>            a lender instance (entitlements.access)
                                     <prefix>:<host>:<instance id>:loan:<guid>   a loan (entityRef.entityId)
                                     <prefix>:<host>:loan                     a loan's kind (entityRef.entityType)

and `<prefix>:partner:<partner id>:user:<name>`, the creator of a product (`createdBy`): the service
writes it, we only store it; the sandbox writes it for its demo products.

Nothing else in the project writes a URN: the inbox's dispatch, the callback's check, the catalog's
validation and the sandbox all ask this module, which reads the settings at each call (a test that
changes them is followed at once). The words are checked when the settings are read
(`prefix_problem`, `word_problem`): a wrong one stops start-up, naming its variable.
"""

import re

from django.conf import settings

# A word of a URN: lower-case letters, digits and hyphens (what the platforms' URNs are made of).
_WORD = re.compile(r"[a-z0-9-]+")
WORD_RULE = "lower-case letters, digits and hyphens ([a-z0-9-]+)"


def word_problem(value: str) -> str | None:
    """Why `value` cannot be a URN word (SVC_URN_PLATFORM, SVC_URN_HOST), or None when it can."""
    if not _WORD.fullmatch(value):
        return f"must be one word of {WORD_RULE}"
    return None


def prefix_problem(value: str) -> str | None:
    """Why `value` cannot be the URN prefix (SVC_URN_PREFIX), or None when it can: `urn:` and one word."""
    scheme, _, word = value.partition(":")
    if scheme != "urn" or not _WORD.fullmatch(word):
        return f"must be urn: and one word of {WORD_RULE}, like urn:svc"
    return None


def urn(*parts: str) -> str:
    """`parts` after the prefix."""
    return ":".join([settings.SVC_URN_PREFIX, *parts])


def platform_urn(*parts: str) -> str:
    """A URN of the platform's own resources: `<prefix>:<platform>:<parts>`."""
    return urn(settings.SVC_URN_PLATFORM, *parts)


def host_urn(*parts: str) -> str:
    """A URN of the host application's: `<prefix>:<host>:<parts>`."""
    return urn(settings.SVC_URN_HOST, *parts)


def transaction_resource_type() -> str:
    """Webhook `meta.resourceType` of a new transaction request."""
    return platform_urn("transaction")


def event_resource_type() -> str:
    """Webhook `meta.resourceType` of a response callback."""
    return platform_urn("transaction", "event")


def webhook_resource_types() -> list[str]:
    """The resource types a product may subscribe to (its `webhooks[].resource`), and we handle."""
    return [transaction_resource_type(), event_resource_type()]


def response_processed_event_type() -> str:
    """Type of the event that says a delivered response was processed."""
    return platform_urn("transaction", "response", "processed")


def instance_urn(instance_id: str) -> str:
    """A lender instance, as listed in `entitlements.access.allow`/`deny` (`instance_urn("")`: their prefix)."""
    return host_urn(instance_id)


def loan_urn(instance_id: str, loan_guid: str) -> str:
    """A loan, as an origin's or a transaction's `entityRef.entityId`."""
    return host_urn(instance_id, "loan", loan_guid)


def loan_entity_type() -> str:
    """`entityRef.entityType` of a loan."""
    return host_urn("loan")


def partner_user_urn(partner_id: str, user: str) -> str:
    """A partner's user, as a product's `createdBy` (written by the service; by the sandbox for its demo)."""
    return urn("partner", partner_id, "user", user)
