"""The service's API (the platform we integrate with): its addresses, our client, its signatures and URNs."""

from partner.core import demo_values  # constants: the public values of local runs and of the sandbox
from partner.platform import urns  # the rule of a URN's words; no Django setting read on import

from .environment import env, urn_part
from .framework import PUBLIC_BASE_URL

# partner.platform: the service's API (the platform we integrate with)
# ------------------------------------------------------------------------------
# partner/platform/__init__.py
SVC_BASE_URL = env.str("SVC_BASE_URL", default=f"{PUBLIC_BASE_URL}/sandbox").rstrip("/")
SVC_TOKEN_URL = env.str("SVC_TOKEN_URL", default=f"{SVC_BASE_URL}/oauth2/v1/token")
# The confidential client. A demo SVC_CLIENT_ID alone grants nothing (`check --deploy` reports it,
# partner.E001); the client secret is required in production, and local runs fall back to the
# sandbox's demo one (config/settings/local.py).
SVC_CLIENT_ID = env.str("SVC_CLIENT_ID", default=demo_values.SANDBOX_CLIENT_ID)
SVC_CLIENT_SECRET = env.str("SVC_CLIENT_SECRET", default="")
SVC_SCOPE = env.str("SVC_SCOPE", default="pc pcapi")
# Webhook signing secrets accepted (rotation: old and new together); a product's own secret is
# accepted too, so production may leave this empty. Local runs fall back to the sandbox's demo one.
SVC_SIGNING_SECRETS = env.list("SVC_SIGNING_SECRETS", default=[])
SVC_SIGNATURE_HEADER = env.str("SVC_SIGNATURE_HEADER", default="Svc-Signature")
SVC_PAT_HEADER = env.str("SVC_PAT_HEADER", default="X-Svc-PAT")


# The words of the service's URNs: `<prefix>:<platform>:transaction`, `<prefix>:<host>:<instance>`.
# The spec's are the defaults; a real platform's are in its onboarding documents (docs/deployment.md).
SVC_URN_PREFIX = urn_part("SVC_URN_PREFIX", "urn:svc", urns.prefix_problem)
SVC_URN_PLATFORM = urn_part("SVC_URN_PLATFORM", "platform", urns.word_problem)
SVC_URN_HOST = urn_part("SVC_URN_HOST", "host", urns.word_problem)
# (connect, read) seconds for every call to the service.
SVC_TIMEOUT = (env.float("SVC_CONNECT_TIMEOUT", default=5.0), env.float("SVC_READ_TIMEOUT", default=30.0))
SVC_MAX_RETRIES = env.int("SVC_MAX_RETRIES", default=3)
# Transport retries (GET, PUT and harmless POST/PATCH): backoff doubled per attempt up to the
# maximum, with jitter; a Retry-After longer than SVC_RETRY_AFTER_MAX goes back to the task instead.
SVC_RETRY_BACKOFF = env.float("SVC_RETRY_BACKOFF", default=0.5)
SVC_RETRY_BACKOFF_MAX = env.float("SVC_RETRY_BACKOFF_MAX", default=8.0)
SVC_RETRY_AFTER_MAX = env.float("SVC_RETRY_AFTER_MAX", default=30.0)
# Where an upload slot's location may point (partner/platform/locations.py). Strict everywhere but in
# local runs, with no variable to turn it off: https only, and only to public addresses.
# SVC_UPLOAD_HOSTS: the hosts allowed (`uploads.example.com`, or `.example.com` for a domain and its
# subdomains), in every mode; empty allows any host.
SVC_UPLOAD_LOCATION_STRICT = True
SVC_UPLOAD_HOSTS = env.list("SVC_UPLOAD_HOSTS", default=[])
