"""`deny_instance PRODUCT URN`: add a lender instance to entitlements.access.deny (PATCH #10)."""

from ._access import AccessCommand


class Command(AccessCommand):
    help = "Deny a lender instance the use of a product (merge patch of entitlements.access)."
    mode = "deny"
