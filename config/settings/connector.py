"""partner.connector: the partner's own order system (events out, answers in) and its API's OAuth server."""

from .environment import env

# partner.connector: the partner's own order system (events out, answers in)
# ------------------------------------------------------------------------------
# partner/connector/__init__.py
# An event its endpoint did not take is tried again after the project's backoff (partner/core/retries.py):
# a wait drawn below a ceiling that starts at CONNECTOR_RETRY_BACKOFF and doubles per try up to
# CONNECTOR_RETRY_BACKOFF_MAX (seconds), for CONNECTOR_RETRY_PATIENCE (seconds) from its first failed
# try, the last try at that moment: about a day, as Svix. Then the event fails and its connection is
# disabled with a notice.
CONNECTOR_RETRY_BACKOFF = env.float("CONNECTOR_RETRY_BACKOFF", default=5.0)
CONNECTOR_RETRY_BACKOFF_MAX = env.float("CONNECTOR_RETRY_BACKOFF_MAX", default=10 * 3600.0)
CONNECTOR_RETRY_PATIENCE = env.float("CONNECTOR_RETRY_PATIENCE", default=24 * 3600.0)
# Events go to public addresses only, as upload locations do (partner/platform/locations.py): checked at
# saving and at each send, on every address the endpoint's host resolves to and on the connected peer. A
# partner whose system runs inside their own network names those networks here (CIDR, comma-separated,
# e.g. "10.20.0.0/16"); a cloud metadata address stays refused whatever is named.
CONNECTOR_ENDPOINT_NETWORKS = env.list("CONNECTOR_ENDPOINT_NETWORKS", default=[])
# Event sends in flight at once across the deployment: the relay hands out no more, so partners'
# slow or hanging endpoints hold at most this many worker threads (each for at most
# CONNECTOR_SEND_TIMEOUT), never the order runs' pool (CELERY_WORKER_CONCURRENCY). At least 1.
CONNECTOR_SENDS_IN_FLIGHT = env.int("CONNECTOR_SENDS_IN_FLIGHT", default=8)
# One POST of an event waits this long for an answer (seconds).
CONNECTOR_SEND_TIMEOUT = env.float("CONNECTOR_SEND_TIMEOUT", default=5.0)
# The relay in each worker hands due events to the workers; it looks again after this many seconds
# when there was nothing to hand over (0: events are not sent from this deployment's workers).
CONNECTOR_RELAY_INTERVAL = env.float("CONNECTOR_RELAY_INTERVAL", default=0.5)
# An Idempotency-Key's first answer is replayed for this long (hours), then the key is forgotten.
CONNECTOR_IDEMPOTENCY_HOURS = env.int("CONNECTOR_IDEMPOTENCY_HOURS", default=48)
# The API's OAuth 2.0 server (django-oauth-toolkit, https://django-oauth-toolkit.readthedocs.io/en/latest/settings.html):
# client credentials only, one client per partner system (each connection's client is made
# `client-credentials`, and the server refuses a client any other grant); access tokens live an
# hour. Everything else follows RFC 9700 (OAuth 2.0 Security Best Current Practice) as the toolkit
# offers it, each gate on so that a regression is an error of `check --deploy`: no implicit or
# password grant, PKCE required (S256 only) should a code flow ever be added, tokens only in the
# Authorization header, tokens stored hashed (a stolen database holds no usable token), https
# redirect URIs only, refresh-token replay revokes the family (docs/security.md).
OAUTH2_PROVIDER = {
    "SCOPES": {"read": "Read orders and events", "answer": "Answer orders"},
    "DEFAULT_SCOPES": ["read", "answer"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.int("CONNECTOR_TOKEN_SECONDS", default=3600),
    "PKCE_REQUIRED": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["https"],
    "ALLOW_URI_WILDCARDS": False,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": True,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    # Refuses a client id no client can have (a NUL byte) before the lookup PostgreSQL would refuse;
    # equal work for an unknown client id.
    "OAUTH2_VALIDATOR_CLASS": "partner.connector.oauth.ClientCredentialsValidator",
    # Client secrets (128 random characters) under a keyed HMAC-SHA256, not PBKDF2 (partner/connector/oauth.py).
    "CLIENT_SECRET_HASHER": "client_hmac_sha256",
}
OAUTH2_PROVIDER_APPLICATION_MODEL = "oauth2_provider.Application"
