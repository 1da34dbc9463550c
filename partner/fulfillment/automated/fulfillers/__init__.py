"""The fulfillers and their registry: a product's `fulfiller` key names the class that does its work.

Adding a fulfiller: write one module with a `Fulfiller` subclass (its key, label, options form,
default rule and documents) and add one line to FULFILLERS. Nothing else names fulfillers: the
catalog validates a product's key and picks the default of a newly pulled product through this
registry (installed in it when Django starts, `FulfillmentConfig.ready`), the order form asks
the class for its options form, and the pipeline for its work.

The first entry is the partner's main product: the default when no fulfiller claims a new product.
"""

from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller
from partner.fulfillment.automated.fulfillers.base import Attachment, Fulfiller, Fulfillment, FulfillmentRefused
from partner.fulfillment.automated.fulfillers.connected import ConnectedFulfiller
from partner.fulfillment.automated.fulfillers.disclosure_status import DisclosureStatusFulfiller
from partner.fulfillment.automated.fulfillers.staff_worked import StaffWorkedFulfiller

FULFILLERS: dict[str, type[Fulfiller]] = {
    AddressVerificationFulfiller.key: AddressVerificationFulfiller,
    DisclosureStatusFulfiller.key: DisclosureStatusFulfiller,
    StaffWorkedFulfiller.key: StaffWorkedFulfiller,
    ConnectedFulfiller.key: ConnectedFulfiller,
}


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
]
