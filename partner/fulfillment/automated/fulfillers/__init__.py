"""The fulfillers and their registry: a product's `fulfiller` key names the class that does its work.

Adding a fulfiller: write one module with a `Fulfiller` subclass (its key, label, options form,
default rule and documents) and name it in `FulfillmentConfig.ready`, which fills FULFILLERS when
Django starts (`fulfillers_register`; the fulfillers of the orders people work live with the
staff's package, above this one). Nothing else names fulfillers: the catalog validates a product's
key and picks the default of a newly pulled product through this registry (installed in it then
too), the order form asks the class for its options form, and the pipeline for its work.

The first registered is the partner's main product: the default when no fulfiller claims a new product.
"""

from partner.fulfillment.automated.fulfillers.base import Attachment, Fulfiller, Fulfillment, FulfillmentRefused

FULFILLERS: dict[str, type[Fulfiller]] = {}  # key -> class, in the order registered


def fulfillers_register(*classes: type[Fulfiller]) -> None:
    """Register each class under its key, in order (`FulfillmentConfig.ready`)."""
    for fulfiller in classes:
        FULFILLERS[fulfiller.key] = fulfiller


class UnknownFulfillerError(LookupError):
    """A product names a fulfiller key that is not registered (a configuration error)."""

    def __init__(self, key):
        self.key = key
        known = ", ".join(sorted(FULFILLERS)) or "none"
        super().__init__(f"No fulfiller is registered under {key!r} (known: {known}).")


def fulfiller_class(key: str) -> type[Fulfiller]:
    """The class registered under `key`; UnknownFulfillerError otherwise."""
    try:
        return FULFILLERS[key]
    except (KeyError, TypeError):
        raise UnknownFulfillerError(key) from None


def fulfiller_for(key: str) -> Fulfiller:
    """A new instance of the fulfiller registered under `key`; UnknownFulfillerError otherwise."""
    return fulfiller_class(key)()


__all__ = [
    "FULFILLERS",
    "Attachment",
    "Fulfiller",
    "Fulfillment",
    "FulfillmentRefused",
    "UnknownFulfillerError",
    "fulfiller_class",
    "fulfiller_for",
    "fulfillers_register",
]
