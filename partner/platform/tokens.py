"""The OAuth 2.0 access token of the service (client credentials grant).

One token for every process: it lives in Django's cache (a file cache on one
machine, Redis for several) and is renewed shortly before `expires_in` runs
out. When it is missing, one process fetches it behind a lock (`cache.add`,
atomic on Redis and locmem; the file cache's `add` is a check-then-set, so it
is made atomic with an flock on a file beside the cache) and re-reads the cache
after acquiring the lock, so that many workers needing a token at once make a
single request. Waiters poll the cache until the token appears.

A 401 from the service drops the cached token (only if it still is the one we
sent: another process may have renewed it already), fetches a new one and
sends the call once more; a second 401 is final.
"""

import contextlib
import hashlib
import logging
import os
import time
import uuid
from pathlib import Path

from django.conf import settings
from django.core.cache import cache

from partner.core.logging import secret_register
from partner.platform.errors import ServiceAuthenticationError, ServiceError, error_from_response
from partner.platform.http import TOKEN_CHANNEL, send, session_api
from partner.platform.signals import token_requested

logger = logging.getLogger(__name__)

DEFAULT_EXPIRES_IN = 300  # expires_in is only RECOMMENDED (RFC 6749 §5.1): assume a short life
EARLY_RENEWAL_MAX = 60  # renew at most this many seconds before expiry (Authlib's leeway)
LOCK_POLL = 0.05


def _key(suffix: str) -> str:
    # Per token endpoint, client and scope: a change of configuration never reuses an old token.
    ident = f"{settings.SVC_TOKEN_URL}|{settings.SVC_CLIENT_ID}|{settings.SVC_SCOPE}"
    return f"svc:token:{hashlib.sha256(ident.encode()).hexdigest()[:16]}:{suffix}"


def early_renewal(expires_in: float) -> float:
    """How long before expiry a token is renewed: a tenth of its life, at most a minute."""
    return min(EARLY_RENEWAL_MAX, max(0.0, expires_in / 10))


def _lock_ttl() -> int:
    connect, read = settings.SVC_TIMEOUT
    return int(connect + read) + 5


def _cached() -> str | None:
    entry = cache.get(_key("access"))
    if not entry or entry.get("renew_at", 0) <= time.time():
        return None
    secret_register(entry["access_token"])  # a process that did not fetch it masks it too
    return entry["access_token"]


@contextlib.contextmanager
def _file_cache_guard():
    """Serialise check-then-set of the file cache across processes (no-op for other backends)."""
    location = settings.CACHES["default"].get("LOCATION", "")
    if "FileBasedCache" not in settings.CACHES["default"].get("BACKEND", "") or not location:
        yield
        return
    import fcntl

    Path(location).mkdir(parents=True, exist_ok=True)
    fd = os.open(os.path.join(location, "svc-token.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _lock_acquire(owner: str) -> bool:
    with _file_cache_guard():
        return cache.add(_key("lock"), owner, timeout=_lock_ttl())


def _lock_release(owner: str) -> None:
    with _file_cache_guard():
        if cache.get(_key("lock")) == owner:
            cache.delete(_key("lock"))


def token_fetch() -> dict:
    """Ask the token endpoint for a new token and store it in the cache. Returns the cache entry.

    POST with the client credentials in HTTP Basic (RFC 6749 §2.3.1). Retried
    on 429/5xx/connection errors: a second token request is harmless.
    """
    data = {"grant_type": "client_credentials"}
    if settings.SVC_SCOPE:
        data["scope"] = settings.SVC_SCOPE
    url = settings.SVC_TOKEN_URL
    response = send(
        "POST",
        url,
        session=session_api(),
        retry=True,
        signal=token_requested,
        channel=TOKEN_CHANNEL,
        data=data,
        auth=(settings.SVC_CLIENT_ID, settings.SVC_CLIENT_SECRET),
    )
    if response.status_code in (400, 401, 403):
        error = error_from_response(response, method="POST", what="token request")
        raise ServiceAuthenticationError(
            "token request refused (client credentials or scope)",
            status=error.status,
            method="POST",
            url=url,
            excerpt=error.excerpt,
        )
    if response.status_code != 200:
        raise error_from_response(response, method="POST", what="token request")
    try:
        body = response.json()
        token = body["access_token"]
    except (ValueError, KeyError, TypeError) as err:
        raise ServiceError("token answer holds no access_token", status=200, method="POST", url=url) from err
    if not isinstance(token, str) or not token:
        raise ServiceError("token answer holds no access_token", status=200, method="POST", url=url)
    secret_register(token)
    if str(body.get("token_type", "bearer")).lower() != "bearer":
        raise ServiceError(f"unsupported token type {body.get('token_type')!r}", status=200, method="POST", url=url)
    try:
        expires_in = float(body.get("expires_in", DEFAULT_EXPIRES_IN))
    except (TypeError, ValueError):
        expires_in = DEFAULT_EXPIRES_IN
    now = time.time()
    renew_at = now + expires_in - early_renewal(expires_in)
    entry = {"access_token": token, "expires_at": now + expires_in, "renew_at": renew_at}
    cache.set(_key("access"), entry, timeout=max(1, int(renew_at - now)))
    logger.info("access token obtained, valid %ss", int(expires_in))
    return entry


def token_get() -> str:
    """A valid access token: the cached one, or one fetched by a single process for all."""
    token = _cached()
    if token:
        return token
    owner = f"{os.getpid()}:{uuid.uuid4().hex}"
    deadline = time.monotonic() + _lock_ttl()
    while True:
        if _lock_acquire(owner):
            try:
                token = _cached()  # another process may have fetched it while we waited
                if token:
                    return token
                return token_fetch()["access_token"]
            finally:
                _lock_release(owner)
        time.sleep(LOCK_POLL)
        token = _cached()
        if token:
            return token
        if time.monotonic() > deadline:
            # The lock holder hangs or died while holding a lock that has not expired yet: do it ourselves.
            logger.warning("token lock not released in time; fetching a token without it")
            return token_fetch()["access_token"]


def token_drop(token: str) -> None:
    """Forget the cached token if it still is `token` (a newer one, fetched meanwhile, stays)."""
    with _file_cache_guard():
        entry = cache.get(_key("access"))
        if entry and entry.get("access_token") == token:
            cache.delete(_key("access"))


def bearer_refused(response) -> bool:
    """Does this 401 say the bearer token was refused? RFC 6750 §3: such an answer names the Bearer scheme."""
    return response.headers.get("WWW-Authenticate", "").strip().lower().startswith("bearer")


def authorized_send(method: str, url: str, *, retry: bool, headers: dict | None = None, renew_on_401=None, **kwargs):
    """Send a call to the service with the bearer token; on a 401 renew the token and send once more.

    `renew_on_401(response) -> bool` narrows which 401s are blamed on the
    token (default: every 401), for endpoints that also check another secret.
    """
    token = token_get()
    response = send(
        method,
        url,
        session=session_api(),
        retry=retry,
        headers={**(headers or {}), "Authorization": f"Bearer {token}"},
        **kwargs,
    )
    if response.status_code != 401 or (renew_on_401 is not None and not renew_on_401(response)):
        return response
    response.close()
    logger.info("%s %s -> 401: renewing the access token and sending once more", method, url)
    token_drop(token)
    token = token_get()
    return send(
        method,
        url,
        session=session_api(),
        retry=retry,
        headers={**(headers or {}), "Authorization": f"Bearer {token}"},
        **kwargs,
    )
