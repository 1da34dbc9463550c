"""What protects the application: headers, trusted proxies and origins, the encryption of secrets at
rest, the preflight at start and the rate limits. Production adds HSTS, the HTTPS redirect and Secure
cookies (config/settings/production.py)."""

from .environment import env, rate
from .framework import PUBLIC_BASE_URL

# SECURITY
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#security
# What every kind of process shares; production adds HSTS, the HTTPS redirect and Secure cookies
# (config/settings/production.py).
# The UI lives in the host's iframe: only HOST_ORIGINS may frame it (CSP frame-ancestors, set per
# embed view, partner/core/framing.py); every other page keeps X-Frame-Options DENY.
HOST_ORIGINS = env.list("HOST_ORIGINS", default=[PUBLIC_BASE_URL])
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# The load balancers or proxies (addresses or networks) whose X-Forwarded-Proto and X-Forwarded-For
# are believed; from anyone else the headers are ignored (partner/core/middleware.py, and gunicorn's
# forwarded_allow_ips in gunicorn.conf.py, which reads the same variable).
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])
# The preflight at start (partner/core/checks.py: preflight_at_start): servers refuse to start on an
# unsafe or missing setting. On in production only.
PREFLIGHT_AT_START = False

# SECRETS AT REST
# ------------------------------------------------------------------------------
# Secrets at rest (product signing secrets, credential values we send on) are encrypted with Fernet;
# several comma-separated keys allow rotation, newest first. Required in production; local runs fall
# back to a public one (config/settings/local.py).
FIELD_ENCRYPTION_KEYS = env.list("FIELD_ENCRYPTION_KEYS", default=[])

# RATE LIMITS
# ------------------------------------------------------------------------------
# partner/core/ratelimits.py; https://django-ratelimit.readthedocs.io/en/stable/rates.html
# A rate is "count/period", the period s, m, h or d with an optional multiplier ("10/m", "100/5m").
# Counted in the default cache per client address (REMOTE_ADDR as TrustedProxyMiddleware leaves
# it), so the limits hold across processes only with a shared cache (Redis; partner.E005); beyond
# a limit the answer is 429 with Retry-After.
# The admin's sign-in: POSTs per address, and failed attempts per username tried.
RATELIMIT_ADMIN_LOGIN = rate("RATELIMIT_ADMIN_LOGIN", "10/m")
# The connector's API (partner.connector): requests per OAuth client (past it 429 with Retry-After),
# and token requests per address: a partner system that loops, or one guessing client secrets, costs
# a 429 and nothing more.
RATELIMIT_API = rate("RATELIMIT_API", "600/m")
RATELIMIT_API_TOKEN = rate("RATELIMIT_API_TOKEN", "30/m")
# The embedded page (partner.ui): its JSON reads that each cost the service a call with the lender's
# token (the origin proxy, an order's progress, the order check) share one count per address. A page
# polling its order takes 20 a minute: raise this when many lenders reach us from one address.
RATELIMIT_ORIGIN = rate("RATELIMIT_ORIGIN", "120/m")
