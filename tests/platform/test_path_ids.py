"""Every id placed in a service path is checked against a safe alphabet before any request is made.

`quote(id, safe="")` encodes "/" and "%", but "." and ".." come through it unchanged and are
dot segments: `GET {base}/partner/v2/origins/..` went out as `GET {base}/partner/v2/` with our
bearer token and the lender's token. The fake server records every request, the token
request included, so "nothing reached it" means no HTTP call at all.
"""

import pytest

from partner.platform import client
from partner.platform.errors import RequestRefused, ServiceError
from partner.platform.types import UploadSlot
from tests.helpers.servers import Reply

UNSAFE_IDS = [
    "..",
    ".",
    "...",
    "",
    "a/b",
    "../products",
    "%2E%2E",
    "%2e",
    "%2F",
    "a%2Fb",
    "a b",
    "a\x00b",
    "a\nb",
    "txn-José",
    "a?b",
    "a#b",
    "a\\b",
    "x" * 201,
]

# Each function of the client that places an id in a path, called with `bad` as that id.
CALLS = {
    "get_origin": lambda bad: client.get_origin(bad, "partner-access-token-1"),
    "get_transaction": lambda bad: client.get_transaction(bad),
    "patch_response": lambda bad: client.patch_response(bad, {"partnerStatus": "x"}),
    "request_upload_slots": lambda bad: client.request_upload_slots(bad, [{"name": "a.pdf", "mimeType": "x/y"}]),
    "get_event (transaction)": lambda bad: client.get_event(bad, "evt-1"),
    "get_event (event)": lambda bad: client.get_event("txn-1", bad),
    "replace_product": lambda bad: client.replace_product(bad, {"id": "p"}),
    "patch_product": lambda bad: client.patch_product(bad, {"name": "p"}),
}


def _id(value: str) -> str:
    return repr(value) if len(value) < 20 else f"{len(value)} characters"


@pytest.mark.parametrize("bad", UNSAFE_IDS, ids=_id)
def test_url_refuses_an_unsafe_id(settings, bad):
    settings.SVC_BASE_URL = "https://svc.example/base"
    with pytest.raises(client.ServicePathIdError) as refused:
        client._url("partner", "v2", "origins", bad)
    assert isinstance(refused.value, RequestRefused) and isinstance(refused.value, ValueError)
    assert not isinstance(refused.value, ServiceError) and not hasattr(refused.value, "status")
    assert not refused.value.transient


@pytest.mark.parametrize("bad", [None, b"txn-1", 1.5, True], ids=repr)
def test_url_refuses_what_is_not_a_string(settings, bad):
    with pytest.raises(client.ServicePathIdError):
        client._url("partner", "v2", "transactions", bad)


@pytest.mark.parametrize("call", list(CALLS), ids=str)
@pytest.mark.parametrize("bad", ["..", ".", "a/b", "%2F", "a\x00b"], ids=_id)
def test_client_functions_refuse_an_unsafe_id_without_any_request(fake_service, call, bad):
    with pytest.raises(Exception) as raised:  # noqa: PT011 - which one is asserted below, after the requests
        CALLS[call](bad)
    assert [(seen.method, seen.path) for seen in fake_service.seen] == []  # neither the call nor a token request
    assert isinstance(raised.value, client.ServicePathIdError)


def test_upload_does_not_build_a_path_from_ids(fake_service):
    """#5 goes to the slot's own location (checked to be http(s)), not a path we build: out of this rule."""
    fake_service.route("PUT", "/upload/1", Reply(200, b""))
    location = f"{fake_service.url}/upload/1"
    slot = UploadSlot(id="..", name="a.pdf", mime_type="application/pdf", location=location, authorization="Up x")
    client.upload_resource(slot, b"%PDF")
    assert [seen.path for seen in fake_service.seen] == ["/upload/1"]


@pytest.mark.parametrize(
    "good, path",
    [
        ("txn-1", "txn-1"),
        ("3f2b8c1e-9a7d-4c1e-8f00-0123456789ab", "3f2b8c1e-9a7d-4c1e-8f00-0123456789ab"),
        ("a.b_c~d", "a.b_c~d"),
        ("urn:x@y", "urn%3Ax%40y"),
        ("..a", "..a"),
        ("x" * 200, "x" * 200),
    ],
)
def test_safe_ids_reach_the_service_encoded(fake_service, good, path):
    fake_service.route("GET", f"/svc/partner/v2/transactions/{path}", Reply(200, {"id": good, "request": {}}))
    assert client.get_transaction(good).id == good
    assert [seen.path for seen in fake_service.requests_to("GET", f"/svc/partner/v2/transactions/{path}")]
