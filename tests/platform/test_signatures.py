"""Webhook signatures: base64 HMAC-SHA256 over the exact bytes, several secrets, malformed values."""

import base64
import hashlib
import hmac
import json

import pytest

from partner.platform.signatures import signature_compute, signature_verify

BODY = b'{"eventType": "created",  "meta": {"resourceId": "t-1", "instanceId": "caf\\u00e9"}}'


def test_compute_is_base64_hmac_sha256_of_the_body():
    expected = base64.b64encode(hmac.new(b"s3cret-value", BODY, hashlib.sha256).digest()).decode()
    assert signature_compute(BODY, "s3cret-value") == expected


def test_verifies_the_raw_bytes_not_a_reserialised_body():
    signature = signature_compute(BODY, "s3cret-value")
    reserialised = json.dumps(json.loads(BODY)).encode()
    assert reserialised != BODY  # same JSON, other bytes (spacing, escapes)
    assert signature_verify(BODY, signature, ["s3cret-value"])
    assert not signature_verify(reserialised, signature, ["s3cret-value"])


def test_any_of_several_secrets_verifies_during_rotation():
    old, new = "old-signing-secret", "new-signing-secret"
    assert signature_verify(BODY, signature_compute(BODY, old), [new, old])
    assert signature_verify(BODY, signature_compute(BODY, new), [new, old])
    assert not signature_verify(BODY, signature_compute(BODY, "retired-secret"), [new, old])


@pytest.mark.parametrize("secrets", [[""], [None], ["", None], []], ids=["empty", "none", "both", "no-secret"])
def test_empty_secrets_never_verify(secrets):
    """An unset secret is no secret: neither "" nor None is taken as the empty HMAC key (or crashes)."""
    assert not signature_verify(BODY, signature_compute(BODY, ""), secrets)


@pytest.mark.parametrize(
    "signature",
    [
        None,
        "",
        "   ",
        "not base64!!",
        "@@@@",
        base64.b64encode(b"short").decode(),
        base64.b64encode(b"x" * 33).decode(),
        base64.b64encode(b"x" * 64).decode(),
    ],
    ids=["none", "empty", "blank", "bad-base64", "bad-chars", "too-short", "too-long", "sha512-length"],
)
def test_malformed_signatures_are_refused(signature):
    assert not signature_verify(BODY, signature, ["s3cret-value"])


def test_a_changed_body_or_signature_fails():
    signature = signature_compute(BODY, "s3cret-value")
    assert not signature_verify(BODY + b" ", signature, ["s3cret-value"])
    digest = bytearray(base64.b64decode(signature))
    digest[0] ^= 1
    assert not signature_verify(BODY, base64.b64encode(bytes(digest)).decode(), ["s3cret-value"])
