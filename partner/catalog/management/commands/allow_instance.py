"""`allow_instance PRODUCT URN`: add a lender instance to entitlements.access.allow (PATCH #10)."""

from ._access import AccessCommand


class Command(AccessCommand):
    help = "Allow a lender instance to use a product (merge patch of entitlements.access)."
    mode = "allow"
