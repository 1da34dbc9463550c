"""Slot request (#4) and upload (#5): one slot per item in order, one-time authorization,
Content-Type equal to the slot's mimeType, bytes kept."""

import requests

from partner.sandbox.models import UploadSlot
from tests.helpers.sandbox import host_transaction

ITEMS = [
    {"name": "report.pdf", "mimeType": "application/pdf"},
    {"name": "data.json", "mimeType": "application/json"},
    {"name": "photo.png", "mimeType": "image/png"},
]


def _slots(api, transaction_id, items=ITEMS):
    return api.post(api.url(f"/partner/v2/transactions/{transaction_id}/response/resources"), json=items, timeout=10)


def test_one_slot_per_item_in_order(api, sandbox):
    transaction_id = host_transaction(sandbox)
    answer = _slots(api, transaction_id)
    assert answer.status_code == 200, answer.text
    slots = answer.json()
    assert [(s["name"], s["mimeType"]) for s in slots] == [(i["name"], i["mimeType"]) for i in ITEMS]
    assert len({s["id"] for s in slots}) == 3
    assert len({s["authorization"] for s in slots}) == 3
    for slot in slots:
        assert set(slot) == {"id", "name", "mimeType", "location", "authorization"}
        assert slot["location"] == f"{sandbox.base}/uploads/{slot['id']}"
    # Only digests of the authorization values are stored.
    assert not UploadSlot.objects.filter(authorization_digest=slots[0]["authorization"]).exists()


def test_upload_keeps_the_bytes_once(api, sandbox):
    slot = _slots(api, host_transaction(sandbox)).json()[0]
    content = b"%PDF-1.4\n" + bytes(range(256)) * 40
    headers = {"Authorization": slot["authorization"], "Content-Type": slot["mimeType"]}
    answer = requests.put(slot["location"], data=content, headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    stored = UploadSlot.objects.get(pk=slot["id"])
    assert bytes(stored.content) == content
    assert stored.size == len(content) and stored.uploaded_at is not None
    again = requests.put(slot["location"], data=b"other", headers=headers, timeout=10)
    assert again.status_code == 409
    assert bytes(UploadSlot.objects.get(pk=slot["id"]).content) == content


def test_upload_refusals(api, sandbox):
    first, second, _ = _slots(api, host_transaction(sandbox)).json()
    put = requests.put
    # The bearer token is not the upload's authorization.
    assert (
        put(
            first["location"],
            data=b"x",
            headers={"Authorization": api.headers["Authorization"], "Content-Type": "application/pdf"},
            timeout=10,
        ).status_code
        == 401
    )
    assert put(first["location"], data=b"x", headers={"Content-Type": "application/pdf"}, timeout=10).status_code == 401
    # Another slot's value does not open this one.
    answer = put(
        first["location"],
        data=b"x",
        headers={"Authorization": second["authorization"], "Content-Type": "application/pdf"},
        timeout=10,
    )
    assert answer.status_code == 401
    assert second["authorization"] not in answer.text
    wrong_type = put(
        first["location"],
        data=b"x",
        headers={"Authorization": first["authorization"], "Content-Type": "application/octet-stream"},
        timeout=10,
    )
    assert wrong_type.status_code == 415
    unknown = put(
        f"{sandbox.base}/uploads/no-such-slot",
        data=b"x",
        headers={"Authorization": first["authorization"], "Content-Type": "application/pdf"},
        timeout=10,
    )
    assert unknown.status_code == 404
    assert UploadSlot.objects.filter(uploaded_at__isnull=False).count() == 0
    # The refused attempts did not use up the slot.
    ok = put(
        first["location"],
        data=b"x",
        headers={"Authorization": first["authorization"], "Content-Type": "application/pdf"},
        timeout=10,
    )
    assert ok.status_code == 200


def test_upload_larger_than_django_memory_limit(api, sandbox, settings):
    slot = _slots(api, host_transaction(sandbox)).json()[0]
    content = b"0123456789abcdef" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 16 + 1024)
    answer = requests.put(
        slot["location"],
        data=content,
        headers={"Authorization": slot["authorization"], "Content-Type": "application/pdf"},
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    assert UploadSlot.objects.get(pk=slot["id"]).size == len(content)


def test_chunked_upload_is_refused_with_411(api, sandbox):
    slot = _slots(api, host_transaction(sandbox)).json()[0]
    answer = requests.put(
        slot["location"],
        data=iter([b"part one", b"part two"]),
        headers={"Authorization": slot["authorization"], "Content-Type": "application/pdf"},
        timeout=10,
    )
    assert answer.status_code == 411
    assert UploadSlot.objects.get(pk=slot["id"]).uploaded_at is None


def test_upload_size_limit(api, sandbox, settings):
    settings.SANDBOX_UPLOAD_MAX_BYTES = 10
    slot = _slots(api, host_transaction(sandbox)).json()[0]
    answer = requests.put(
        slot["location"],
        data=b"x" * 11,
        headers={"Authorization": slot["authorization"], "Content-Type": "application/pdf"},
        timeout=10,
    )
    assert answer.status_code == 413


def test_slot_request_refusals(api, sandbox):
    transaction_id = host_transaction(sandbox)
    for items in [
        [],
        {},
        [{"name": "a.pdf"}],
        [{"mimeType": "application/pdf"}],
        [{"name": "", "mimeType": "application/pdf"}],
        [{"name": "a.pdf", "mimeType": "pdf"}],
        ["a.pdf"],
    ]:
        answer = _slots(api, transaction_id, items)
        assert answer.status_code == 400, items
        assert answer.json()["problems"]
    assert _slots(api, "no-such-transaction").status_code == 404
    assert UploadSlot.objects.count() == 0
