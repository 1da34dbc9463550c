"""The fulfillers and their registry: a product's `fulfiller` key names the class that does its work.

Adding a fulfiller: write one module with a `Fulfiller` subclass and add one line to FULFILLERS.
"""

from partner.fulfillment.fulfillers.address_verification import AddressVerificationFulfiller
from partner.fulfillment.fulfillers.base import Attachment, Fulfiller, Fulfilment, FulfilmentRefused
from partner.fulfillment.fulfillers.disclosure_status import DisclosureStatusFulfiller

FULFILLERS: dict[str, type[Fulfiller]] = {
    AddressVerificationFulfiller.key: AddressVerificationFulfiller,
    DisclosureStatusFulfiller.key: DisclosureStatusFulfiller,
}


class UnknownFulfillerError(LookupError):
    """A product names a fulfiller key that is not registered (a configuration error)."""

    def __init__(self, key):
        self.key = key
        known = ", ".join(sorted(FULFILLERS)) or "none"
        super().__init__(f"No fulfiller is registered under {key!r} (known: {known}).")


def fulfiller_for(key: str) -> Fulfiller:
    """A new instance of the fulfiller registered under `key`; UnknownFulfillerError otherwise."""
    try:
        fulfiller_class = FULFILLERS[key]
    except (KeyError, TypeError):
        raise UnknownFulfillerError(key) from None
    return fulfiller_class()


def fulfiller_choices() -> list[tuple[str, str]]:
    """(key, label) of every registered fulfiller, in registry order, for model and form choices."""
    return [(key, fulfiller_class.label) for key, fulfiller_class in FULFILLERS.items()]


__all__ = [
    "FULFILLERS",
    "Attachment",
    "Fulfiller",
    "Fulfilment",
    "FulfilmentRefused",
    "UnknownFulfillerError",
    "fulfiller_choices",
    "fulfiller_for",
]
