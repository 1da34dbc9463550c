"""The connector's figures (counted where they happen)."""

from prometheus_client import Counter

ENTITLEMENT_UNREADABLE = Counter(
    "partner_connector_entitlement_unreadable",
    "Orders whose product's request data entitlement could not be applied as written (a field that is "
    "not a loan path, or fields that match none of the loan's): the loan data sent as the service gave "
    "it, or found empty; a warning is logged each time.",
    ["product", "reason"],
)
