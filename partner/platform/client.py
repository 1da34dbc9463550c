"""The service's endpoints #1–#10, one function each, plus pagination and resourceRef parsing.

Module-level functions on this process's pooled session (partner.platform.http)
with the shared access token (partner.platform.tokens). Every function raises
a partner.platform.errors.ServiceError subclass when the service does not answer
200 (the spec: anything else is a failure), and a RequestRefused subclass when we
refuse to send the request at all (an id that may not go into a path, an upload
location we do not send to): nothing reached the service then. Whether a failed
call is sent again by the transport is stated in each docstring: GET and PUT are;
PATCH and POST only where repeating them is harmless.

Names: the client's functions are verb first, like the HTTP calls they make
(`get_transaction`, `patch_response`, `request_upload_slots`, `upload_resource`);
the domain's services are `<entity>_<action>` (`order_run`,
`order_complete`, `product_push`), with the same words for the same thing.
"""

import json
import re
from collections.abc import Iterator
from urllib.parse import quote, urlsplit

from django.conf import settings

from partner.core import outbound
from partner.core.logging import secret_register
from partner.platform.errors import RequestRefused, ResourceOutsideServiceError, ServiceError
from partner.platform.http import response_json, retry_allowed, send, session_upload
from partner.platform.locations import UploadLocationRefusedError, address_refusal, upload_location_check
from partner.platform.tokens import authorized_send, bearer_refused
from partner.platform.types import Origin, Page, Product, ResourceRef, Transaction, TransactionEvent, UploadSlot

MAX_PAGE_SIZE = 50  # spec, Limits: `limit` is at most 50
MERGE_PATCH = "application/merge-patch+json"
JSON = "application/json"
UPLOAD_BLOCK = 64 * 1024


class ServicePathIdError(RequestRefused, ValueError):
    """An id that cannot be placed in a service path: refused before any request is made.

    Not transient: the same id is refused every time. A RequestRefused (nothing reached the
    service) and a ValueError (what it is: a bad argument).
    """


# The characters of an id in a path (RFC 3986 unreserved, and ":" and "@", which `resource_ref_parse`
# takes too); an id of dots only is a dot segment ("." or ".."), which a client or server resolves.
_PATH_ID = re.compile(r"[A-Za-z0-9._~:@-]{1,200}")


def path_id_valid(value) -> bool:
    """True when `value` may be placed in a service path as one segment."""
    return isinstance(value, str) and bool(_PATH_ID.fullmatch(value)) and value.strip(".") != ""


def _url(*segments) -> str:
    """The service URL of these path segments, each checked (`path_id_valid`) and percent-encoded."""
    parts = []
    for segment in segments:
        if not path_id_valid(segment):
            shown = repr(segment)[:60] if isinstance(segment, str) else type(segment).__name__
            raise ServicePathIdError(f"not an id that may be placed in a service path: {shown}")
        parts.append(quote(segment, safe=""))
    return settings.SVC_BASE_URL + "/" + "/".join(parts)


def _json_body(payload) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def _call(method: str, url: str, *, what: str, harmless: bool = False, empty_ok: bool = False, **kwargs):
    """One authorised call; resent on transient failures when the method is idempotent or `harmless`."""
    response = authorized_send(method, url, retry=retry_allowed(method, harmless=harmless), **kwargs)
    return response_json(response, method=method, what=what, empty_ok=empty_ok)


# 1 ---------------------------------------------------------------------------------------------------------------
def get_origin(origin_id: str, partner_access_token: str) -> Origin:
    """#1 GET /partner/v2/origins/{id} with the partner access token (header SVC_PAT_HEADER).

    Retried (GET). Origin id and token are valid 300 s and only together; an
    expired pair answers 4xx (ServiceAuthenticationError/ServiceNotFoundError).
    A 401 renews our bearer token (and sends once more) only when it names the
    Bearer scheme in WWW-Authenticate (RFC 6750 §3); any other 401 is the
    origin's, so an expired origin does not cost a token request.
    """
    if not partner_access_token:
        raise ValueError("a partner access token is required")
    secret_register(partner_access_token)
    data = _call(
        "GET",
        _url("partner", "v2", "origins", origin_id),
        what="origin retrieval",
        headers={settings.SVC_PAT_HEADER: partner_access_token},
        renew_on_401=bearer_refused,
    )
    return Origin.from_json(data)


# 2 ---------------------------------------------------------------------------------------------------------------
def get_transaction(transaction_id: str) -> Transaction:
    """#2 GET /partner/v2/transactions/{id}: the transaction and its `request`. Retried (GET)."""
    data = _call("GET", _url("partner", "v2", "transactions", transaction_id), what="transaction retrieval")
    return Transaction.from_json(data, transaction_id=transaction_id)


# 3 ---------------------------------------------------------------------------------------------------------------
def patch_response(transaction_id: str, payload: dict) -> dict:
    """#3 PATCH /partner/v2/transactions/{id}/response with the response payload (JSON).

    Not retried by the transport: each accepted response is processed by the
    service and answered with an event and a webhook, so a blind resend could
    deliver the response twice. The caller (the fulfillment task, which records
    its attempts) decides. Returns the service's JSON answer ({} when empty:
    the spec does not show the body).
    """
    data = _call(
        "PATCH",
        _url("partner", "v2", "transactions", transaction_id, "response"),
        what="response delivery",
        empty_ok=True,
        data=_json_body(payload),
        headers={"Content-Type": JSON},
    )
    return data if isinstance(data, dict) else {}


# 4 ---------------------------------------------------------------------------------------------------------------
def request_upload_slots(transaction_id: str, items: list[dict]) -> list[UploadSlot]:
    """#4 POST /partner/v2/transactions/{id}/response/resources: one upload slot per {name, mimeType}, in order.

    Retried although POST: a repeated slot request only leaves unused slots
    behind (a slot counts only once the response references its id), and we use
    the answer we receive.
    """
    request = [{"name": item["name"], "mimeType": item["mimeType"]} for item in items]
    url = _url("partner", "v2", "transactions", transaction_id, "response", "resources")
    data = _call(
        "POST", url, what="upload slot request", harmless=True, data=_json_body(request), headers={"Content-Type": JSON}
    )
    if not isinstance(data, list) or len(data) != len(request):
        raise ServiceError(f"upload slot request: expected {len(request)} slots", status=200, method="POST", url=url)
    slots = [UploadSlot.from_json(item) for item in data]
    for slot in slots:
        secret_register(slot.authorization)
        if not slot.id or not slot.location:
            raise ServiceError("upload slot request: a slot has no id or location", status=200, method="POST", url=url)
    return slots


# 5 ---------------------------------------------------------------------------------------------------------------
def upload_resource(slot: UploadSlot, data) -> None:
    """#5 PUT the file to `slot.location` with exactly the slot's Authorization value and mimeType.

    `data` is bytes or a binary file-like object, which is streamed. Sent
    through the upload session, which never carries our bearer token and ignores
    ~/.netrc. Retried (PUT) when the body can be sent again: bytes, or a
    seekable file (rewound to where it started); a non-seekable stream is sent once.
    The location must pass `upload_location_check` (partner.platform.locations: https and a
    public address in production) or UploadLocationRefusedError is raised before any connection,
    and in strict mode the connection itself is held to the same addresses (checked when the host
    is resolved again and on the connected peer, `partner.core.outbound`: a name rebound to our
    network meanwhile is refused the same way);
    a slot without its Authorization value is refused (RequestRefused) before any connection too.
    """
    if not slot.authorization:
        raise RequestRefused("upload slot carries no authorization value", method="PUT", url=slot.location)
    upload_location_check(slot.location)
    rewind = None
    if isinstance(data, bytes | bytearray | memoryview):
        body, retry = bytes(data), retry_allowed("PUT")
    elif hasattr(data, "read"):
        try:
            seekable = bool(data.seekable())
        except (AttributeError, OSError):
            seekable = False
        if seekable:
            # requests sends a file object in blocks with its Content-Length (size from the current position).
            body, retry, position = data, retry_allowed("PUT"), data.tell()

            def rewind():
                data.seek(position)

        else:
            # Length unknown: sent chunked, block by block, and only once (it cannot be read again).
            body, retry = iter(lambda: data.read(UPLOAD_BLOCK), b""), False
    else:
        raise TypeError("upload data must be bytes or a binary file-like object")
    try:
        response = send(
            "PUT",
            slot.location,
            session=session_upload(),
            retry=retry,
            rewind=rewind,
            whole=False,
            address_refusal=address_refusal if settings.SVC_UPLOAD_LOCATION_STRICT else None,
            data=body,
            headers={"Authorization": slot.authorization, "Content-Type": slot.mime_type},
        )
    except RequestRefused as err:
        if (refused := outbound.address_refused(err)) is None:
            raise
        raise UploadLocationRefusedError(
            f"upload location refused: {refused}", method="PUT", url=slot.location
        ) from err
    response_json(response, method="PUT", what="upload", empty_ok=True)


# 6 ---------------------------------------------------------------------------------------------------------------
def get_event(transaction_id: str, event_id: str) -> TransactionEvent:
    """#6 GET /partner/v2/transactions/{id}/events/{event_id}. Retried (GET)."""
    data = _call(
        "GET", _url("partner", "v2", "transactions", transaction_id, "events", event_id), what="event retrieval"
    )
    return TransactionEvent.from_json(data, event_id=event_id)


# 7, 8: pagination --------------------------------------------------------------------------------------------------
def _page_fetch(path: tuple, *, start: int, limit: int, what: str) -> tuple[list, int]:
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise ValueError("start must be a non-negative integer")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= MAX_PAGE_SIZE:
        raise ValueError(f"limit must be an integer from 0 to {MAX_PAGE_SIZE}")
    url = _url(*path)
    response = authorized_send("GET", url, retry=retry_allowed("GET"), params={"start": start, "limit": limit})
    items = response_json(response, method="GET", what=what)
    if not isinstance(items, list):
        raise ServiceError(f"{what}: answer is not a JSON array", status=200, method="GET", url=url)
    try:
        total = int(response.headers["X-Total-Count"])
    except (KeyError, ValueError) as err:
        raise ServiceError(f"{what}: no valid X-Total-Count header", status=200, method="GET", url=url) from err
    if total < 0:
        raise ServiceError(f"{what}: negative X-Total-Count", status=200, method="GET", url=url)
    return items, total


def _iterate(page_function, page_size: int) -> Iterator:
    if not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be an integer from 1 to {MAX_PAGE_SIZE}")
    start = 0
    while True:
        page = page_function(start=start, limit=page_size)
        yield from page.items
        start = page.next_start
        if start is None:  # last page: no request for an empty page after it
            return


def list_transactions_page(start: int = 0, limit: int = MAX_PAGE_SIZE) -> Page:
    """#7 GET /partner/v2/transactions?start=&limit=: one page of Transaction objects and the total. Retried (GET)."""
    items, total = _page_fetch(("partner", "v2", "transactions"), start=start, limit=limit, what="transaction listing")
    return Page(items=[Transaction.from_json(item) for item in items], total=total, start=start, limit=limit)


def iter_transactions(page_size: int = MAX_PAGE_SIZE) -> Iterator[Transaction]:
    """Every transaction of #7, page by page, stopping exactly at X-Total-Count."""
    return _iterate(list_transactions_page, page_size)


def list_products_page(start: int = 0, limit: int = MAX_PAGE_SIZE) -> Page:
    """#8 GET /partner/v2/products?start=&limit=: one page of Product objects and the total. Retried (GET)."""
    items, total = _page_fetch(("partner", "v2", "products"), start=start, limit=limit, what="product listing")
    return Page(items=[Product.from_json(item) for item in items], total=total, start=start, limit=limit)


def iter_products(page_size: int = MAX_PAGE_SIZE) -> Iterator[Product]:
    """Every product of #8, page by page, stopping exactly at X-Total-Count."""
    return _iterate(list_products_page, page_size)


def _product_answer(data) -> Product | None:
    # The spec does not show the bodies of #9 and #10: a product when the service sends one back.
    return Product.from_json(data) if isinstance(data, dict) and data.get("id") else None


# 9, 10 -------------------------------------------------------------------------------------------------------------
def replace_product(product_id: str, product: dict) -> Product | None:
    """#9 PUT /partner/v2/products/{id} with the full Product object. Retried (PUT is idempotent)."""
    data = _call(
        "PUT",
        _url("partner", "v2", "products", product_id),
        what="product replacement",
        empty_ok=True,
        data=_json_body(product),
        headers={"Content-Type": JSON},
    )
    return _product_answer(data)


def patch_product(product_id: str, patch: dict) -> Product | None:
    """#10 PATCH /partner/v2/products/{id} with a JSON merge patch (application/merge-patch+json).

    Retried although PATCH: an RFC 7396 merge patch sets the members it names
    to the values it gives (or removes them), so applying it twice gives the
    same product as applying it once.
    """
    data = _call(
        "PATCH",
        _url("partner", "v2", "products", product_id),
        what="product update",
        harmless=True,
        empty_ok=True,
        data=_json_body(patch),
        headers={"Content-Type": MERGE_PATCH},
    )
    return _product_answer(data)


# resourceRef -------------------------------------------------------------------------------------------------------
_SEGMENT = re.compile(r"^[A-Za-z0-9._~:@-]+$")


def _port(parts) -> int | None:
    return parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())


def resource_ref_parse(url: str) -> ResourceRef:
    """The transaction or event a webhook's `meta.resourceRef` names.

    Refuses (ResourceOutsideServiceError) anything that is not exactly
    `{SVC_BASE_URL}/partner/v2/transactions/{id}` or `.../{id}/events/{event_id}`
    on the configured service: another scheme, host or port, user info, a path
    outside the base, dot segments, encoded characters, a query or a fragment.
    We then call our own URL built from the ids, never the URL we were given.
    """

    def refuse(reason):
        return ResourceOutsideServiceError(f"resourceRef refused: {reason}", url=url if isinstance(url, str) else None)

    if not isinstance(url, str) or not url:
        raise refuse("not a URL")
    try:
        ref, base = urlsplit(url), urlsplit(settings.SVC_BASE_URL)
        ref_port, base_port = _port(ref), _port(base)
    except ValueError as err:
        raise refuse("not a URL") from err
    if (ref.scheme.lower(), (ref.hostname or "").lower(), ref_port) != (
        base.scheme.lower(),
        (base.hostname or "").lower(),
        base_port,
    ):
        raise refuse("not on the service's host")
    if ref.username is not None or ref.password is not None:
        raise refuse("carries user info")
    if ref.query or ref.fragment or url.rstrip().endswith(("?", "#")):
        raise refuse("carries a query or fragment")
    base_path = base.path.rstrip("/")
    if not ref.path.startswith(base_path + "/"):
        raise refuse("not under the service's base path")
    segments = ref.path[len(base_path) + 1 :].split("/")
    if any(not _SEGMENT.match(s) or s in (".", "..") for s in segments):
        raise refuse("unexpected characters in the path")
    if segments[:3] == ["partner", "v2", "transactions"]:
        if len(segments) == 4:
            return ResourceRef(kind="transaction", transaction_id=segments[3])
        if len(segments) == 6 and segments[4] == "events":
            return ResourceRef(kind="event", transaction_id=segments[3], event_id=segments[5])
    raise refuse("not a transaction or event of the service")
