"""Light typed results of the service's endpoints.

Frozen dataclasses holding the fields we use, plus `.raw`, the service's JSON
as received (the spec leaves most shapes open, so nothing is dropped).
A Product keeps the service's whole object in `.raw`, since a PUT (#9) must send
it back whole. Fields that hold secrets (credentials, the upload
authorization) are kept out of `repr`, so a logged object does not leak them.
"""

from dataclasses import dataclass, field


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Origin:
    """Endpoint #1: the origin of a user interface launch (valid 300 s)."""

    id: str
    entity_id: str
    loan_format: str
    loan: dict = field(repr=False)
    product: dict
    credentials: dict = field(repr=False)
    interface_url: str
    environment: str
    originating_party: dict = field(repr=False)
    errors: object = None
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict) -> "Origin":
        data = _dict(data)
        return cls(
            id=str(data.get("id", "")),
            entity_id=str(_dict(data.get("entityRef")).get("entityId", "")),
            loan_format=str(data.get("loanFormat", "")),
            loan=_dict(data.get("loan")),
            product=_dict(data.get("product")),
            credentials=_dict(data.get("credentials")),
            interface_url=str(data.get("interfaceUrl", "")),
            environment=str(data.get("environment", "")),
            originating_party=_dict(data.get("originatingParty")),
            errors=data.get("errors"),
            raw=data,
        )


@dataclass(frozen=True)
class Transaction:
    """Endpoint #2: a transaction and its `request` (loan, credentials, type, options)."""

    id: str
    request: dict = field(repr=False)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict, *, transaction_id: str = "") -> "Transaction":
        data = _dict(data)
        return cls(id=str(data.get("id") or transaction_id), request=_dict(data.get("request")), raw=data)


@dataclass(frozen=True)
class UploadSlot:
    """Endpoint #4 item: where and with which Authorization value one attachment is uploaded (#5)."""

    id: str
    name: str
    mime_type: str
    location: str
    authorization: str = field(repr=False)
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict) -> "UploadSlot":
        data = _dict(data)
        return cls(
            id=str(data.get("id", "")),
            name=str(data.get("name", "")),
            mime_type=str(data.get("mimeType", "")),
            location=str(data.get("location", "")),
            authorization=str(data.get("authorization", "")),
            raw=data,
        )

    def resource(self) -> dict:
        """The item of the response's `resources` that references this upload."""
        return {"id": self.id, "name": self.name, "mimeType": self.mime_type}


@dataclass(frozen=True)
class TransactionEvent:
    """Endpoint #6: an event of a transaction (e.g. response processed)."""

    id: str
    type: str
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict, *, event_id: str = "") -> "TransactionEvent":
        data = _dict(data)
        return cls(id=str(data.get("id") or event_id), type=str(data.get("type", "")), raw=data)


@dataclass(frozen=True)
class Product:
    """A Product object of #8 (or the answer of #9 and #10 when the service sends one back)."""

    id: str
    partner_id: str
    name: str
    listing_name: str
    environment: str
    status: str
    raw: dict = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: dict) -> "Product":
        data = _dict(data)
        return cls(
            id=str(data.get("id", "")),
            partner_id=str(data.get("partnerId", "")),
            name=str(data.get("name", "")),
            listing_name=str(data.get("listingName", "")),
            environment=str(data.get("environment", "")),
            status=str(data.get("status", "")),
            raw=data,
        )


@dataclass(frozen=True)
class Page:
    """One page of #7 or #8: its items, the total size of the result set (X-Total-Count), start and limit."""

    items: list
    total: int
    start: int
    limit: int

    @property
    def next_start(self) -> int | None:
        """Where the next page starts, or None when this page was the last."""
        following = self.start + len(self.items)
        return following if self.items and following < self.total else None


@dataclass(frozen=True)
class ResourceRef:
    """A parsed `meta.resourceRef`: a transaction, or an event of a transaction."""

    kind: str  # "transaction" | "event"
    transaction_id: str
    event_id: str | None = None
