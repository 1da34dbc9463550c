"""Errors of the catalog, shown to partner staff and callers as they are (no secret in them)."""

from partner.core.errors import ApplicationError


class ProductNotFound(ApplicationError):
    """Neither we nor the service know the product asked for (nor, in the connector's API, the
    connection works it)."""

    status_code = 404
    slug = "product-not-found"
    title = "Product not found"


class ProductSyncError(ApplicationError):
    """The service refused or failed a product call; `message` says which and why."""

    status_code = 502
