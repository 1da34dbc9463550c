"""Access tokens of the sandbox's OAuth 2.0 endpoint: issued to known confidential clients, revoked by tests.

A client is known when it is the configured one (SVC_CLIENT_ID / SVC_CLIENT_SECRET)
or an active `ApiClient` row; tokens are stored only as digests.
"""

import hmac
import secrets
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from partner.core.logging import secret_register

from .errors import refused
from .models import AccessToken, ApiClient
from .selectors import digest


def _client_known(client_id: str, client_secret: str) -> bool:
    configured = hmac.compare_digest(client_id.encode(), settings.SVC_CLIENT_ID.encode()) & hmac.compare_digest(
        client_secret.encode(), settings.SVC_CLIENT_SECRET.encode()
    )
    if configured:
        return True
    row = ApiClient.objects.filter(client_id=client_id, active=True).first()
    return row is not None and hmac.compare_digest(row.secret_digest, digest(client_secret))


def token_issue(*, client_id: str, client_secret: str, scope: str = "") -> tuple[str, int]:
    """An access token for a known confidential client: (token, lifetime in seconds)."""
    if not client_id or not client_secret or not _client_known(client_id, client_secret):
        raise refused("client authentication failed", status=401, code="invalid_client")
    lifetime = settings.SANDBOX_TOKEN_LIFETIME
    # Tokens are requested rarely (clients cache them): a good moment to drop long-expired rows.
    AccessToken.objects.filter(expires_at__lt=timezone.now() - timedelta(days=1)).delete()
    token = secrets.token_urlsafe(32)
    secret_register(token)
    AccessToken.objects.create(
        digest=digest(token),
        client_id=client_id,
        scope=scope[:200],
        expires_at=timezone.now() + timedelta(seconds=lifetime),
    )
    return token, lifetime


def token_revoke_all() -> int:
    """Expire every access token (tests: the client must fetch a new one)."""
    return AccessToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
