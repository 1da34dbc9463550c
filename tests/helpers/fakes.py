"""A fake of the service's client for fast tests of the pipeline and the dispatch: no HTTP, every call recorded.

`FakePlatform` stands in for the functions of `partner.platform.client` that the pipeline, the
order services and the catalog's pull call (`resource_ref_parse` stays the real one, so a
reference is checked as in production). The test gives it the service's state (a transaction's
request, an event's type, the listed products) and reads back what was called, in order.
Install it with the `fake_platform` fixture of `tests/conftest.py`.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.conf import settings

from partner.platform import client
from partner.platform.errors import ServiceError, ServiceNotFoundError
from partner.platform.types import Product, Transaction, TransactionEvent, UploadSlot


@dataclass(frozen=True)
class Call:
    name: str  # the client function
    args: tuple


class FakePlatform:
    """The service as the client's functions see it, recording each call before it answers.

    `fail(name, error, after=n)` makes the call of function `name` that follows `n` successful ones
    raise `error`, once, as the real client raises a ServiceError for an answer other than 200.
    """

    FUNCTIONS = ("get_transaction", "request_upload_slots", "upload_resource", "patch_response", "get_event")

    def __init__(self):
        self.transactions: dict[str, dict] = {}  # transaction id -> its JSON (id, request, product)
        self.events: dict[tuple[str, str], str | dict] = {}  # (transaction id, event id) -> its type, or its JSON
        self.products: list[dict] = []  # the service's Product objects, as #8 lists them
        self.calls: list[Call] = []
        self._outcomes: dict[str, list[ServiceError | None]] = defaultdict(list)  # None: answer
        self._slots = 0

    def install(self, monkeypatch) -> "FakePlatform":
        for name in (*self.FUNCTIONS, "iter_products"):
            monkeypatch.setattr(client, name, getattr(self, name))
        return self

    # what the test sets up -----------------------------------------------------------------------------------------
    def transaction_add(self, transaction_id: str, *, request: dict, product_name: str = "") -> None:
        self.transactions[transaction_id] = {
            "id": transaction_id,
            "request": request,
            "product": {"name": product_name},
        }

    def fail(self, name: str, error: ServiceError, *, after: int = 0) -> None:
        self._outcomes[name].extend([None] * after + [error])

    # what the test reads back --------------------------------------------------------------------------------------
    def names(self) -> list[str]:
        return [call.name for call in self.calls]

    def called(self, name: str) -> list[tuple]:
        return [call.args for call in self.calls if call.name == name]

    # the client's functions ----------------------------------------------------------------------------------------
    def _record(self, name: str, *args) -> None:
        self.calls.append(Call(name, args))
        error = self._outcomes[name].pop(0) if self._outcomes[name] else None
        if error is not None:
            raise error

    def get_transaction(self, transaction_id: str) -> Transaction:
        self._record("get_transaction", transaction_id)
        if transaction_id not in self.transactions:
            raise ServiceNotFoundError(
                "transaction retrieval: not found",
                status=404,
                method="GET",
                url=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{transaction_id}",
            )
        return Transaction.from_json(self.transactions[transaction_id], transaction_id=transaction_id)

    def request_upload_slots(self, transaction_id: str, items: list[dict]) -> list[UploadSlot]:
        self._record("request_upload_slots", transaction_id, [dict(item) for item in items])
        slots = []
        for item in items:
            self._slots += 1
            slot_id = f"res-{self._slots}"
            slots.append(
                UploadSlot(
                    id=slot_id,
                    name=item["name"],
                    mime_type=item["mimeType"],
                    location=f"{settings.SVC_BASE_URL}/uploads/{slot_id}",
                    authorization=f"Upload one-time-{slot_id}",
                )
            )
        return slots

    def upload_resource(self, slot: UploadSlot, data) -> None:
        self._record("upload_resource", slot.id, data.read() if hasattr(data, "read") else bytes(data))

    def patch_response(self, transaction_id: str, payload: dict) -> dict:
        self._record("patch_response", transaction_id, payload)
        return {}

    def get_event(self, transaction_id: str, event_id: str) -> TransactionEvent:
        self._record("get_event", transaction_id, event_id)
        if (transaction_id, event_id) not in self.events:
            raise ServiceNotFoundError(
                "event retrieval: not found",
                status=404,
                method="GET",
                url=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{transaction_id}/events/{event_id}",
            )
        event = self.events[(transaction_id, event_id)]
        if isinstance(event, dict):  # the event's whole JSON (details included)
            return TransactionEvent.from_json(event, event_id=event_id)
        return TransactionEvent(id=event_id, type=event)

    def iter_products(self, page_size: int = client.MAX_PAGE_SIZE):
        self._record("iter_products")
        return iter([Product.from_json(item) for item in self.products])
