"""Webhook signatures: base64 of HMAC-SHA256 over the exact bytes of the body.

Used by our receiver (verify) and by the sandbox (sign). Verification takes
several secrets so a secret can be rotated without dropping deliveries, and
compares decoded digests in constant time.
"""

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable


def signature_compute(body: bytes, secret: str) -> str:
    digest = hmac.new(secret.encode(), body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def signature_matches(body: bytes, signature: str | None, secrets: Iterable[str]) -> list[str]:
    """The secrets of `secrets` under which `signature` is the signature of `body` (none: refused)."""
    if not signature:
        return []
    try:
        received = base64.b64decode(signature.strip(), validate=True)
    except (binascii.Error, ValueError):
        return []
    if len(received) != hashlib.sha256().digest_size:
        return []
    matched = []
    for secret in secrets:
        if not secret:
            continue
        expected = hmac.digest(secret.encode(), body, "sha256")  # one call into OpenSSL, no HMAC object
        # No early exit: every secret is tried, so timing does not tell which matched.
        if hmac.compare_digest(expected, received):
            matched.append(secret)
    return matched


def signature_verify(body: bytes, signature: str | None, secrets: Iterable[str]) -> bool:
    """True when `signature` is the signature of `body` under any of `secrets`."""
    return bool(signature_matches(body, signature, secrets))
