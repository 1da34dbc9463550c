"""URNs of the service, built on SVC_URN_PREFIX (`urn:svc` by default)."""

from django.conf import settings


def urn(*parts: str) -> str:
    return ":".join([settings.SVC_URN_PREFIX, *parts])


def transaction_resource_type() -> str:
    """Webhook `meta.resourceType` of a new transaction request."""
    return urn("platform", "transaction")


def event_resource_type() -> str:
    """Webhook `meta.resourceType` of a response callback."""
    return urn("platform", "transaction", "event")


def response_processed_event_type() -> str:
    """Type of the event that says a delivered response was processed."""
    return urn("platform", "transaction", "response", "processed")


def instance_urn(instance_id: str) -> str:
    """A lender instance, as listed in `entitlements.access.allow`/`deny`."""
    return urn("host", instance_id)


def loan_urn(instance_id: str, loan_guid: str) -> str:
    return urn("host", instance_id, "loan", loan_guid)


def loan_entity_type() -> str:
    return urn("host", "loan")
