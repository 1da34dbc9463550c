"""Which fulfiller does a product's work: the keys a product may name, and a new product's default.

The fulfillers live in `partner.fulfillment`, a layer above the catalog, yet a product names its
fulfiller, staff choose it in the admin, and a newly pulled product needs a default. The catalog
never imports upward: the fulfillment app installs its registry here when Django starts
(`FulfillmentConfig.ready`), and every question about fulfiller keys is answered from it. Asking
before a registry is installed is a configuration error, raised, never a validation skipped.

One key is named here because layers on both sides of the fulfillment read it: `CONNECTED`, the
fulfiller of a product a partner's own order system works (the fulfillment's `ConnectedFulfiller`
registers under it, the connector finds its products by it). Every other key is the registry's.
"""

from collections.abc import Mapping
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured


class FulfillerKind(Protocol):
    """What the catalog needs of a fulfiller class."""

    key: str
    label: str

    def is_default_for(self, product: dict) -> bool: ...


CONNECTED = "connected"  # the fulfiller key of a product worked by a partner's own order system

_registry: Mapping[str, FulfillerKind] | None = None


def fulfillers_install(registry: Mapping[str, FulfillerKind]) -> None:
    """Answer every question below from `registry` (kept by reference, in its order)."""
    global _registry
    _registry = registry


def _installed() -> Mapping[str, FulfillerKind]:
    if not _registry:
        raise ImproperlyConfigured("No fulfiller is installed: partner.fulfillment must be in INSTALLED_APPS.")
    return _registry


def fulfiller_choices() -> list[tuple[str, str]]:
    """(key, label) of every registered fulfiller, in registry order, for the admin's choice."""
    return [(key, kind.label) for key, kind in _installed().items()]


def fulfiller_known(key: str) -> bool:
    return key in _installed()


def fulfiller_main() -> str:
    """The partner's main product's fulfiller (the first registered): a new product's default."""
    return next(iter(_installed()))


def fulfiller_default(product: dict) -> str:
    """The fulfiller of a newly pulled product (the service's Product JSON): the first that claims it."""
    for key, kind in _installed().items():
        if kind.is_default_for(product):
            return key
    return fulfiller_main()
