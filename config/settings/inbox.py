"""partner.inbox: webhooks in."""

from .environment import env

# partner.inbox: webhooks in
# ------------------------------------------------------------------------------
# partner/inbox/__init__.py
# The largest body accepted on POST /v1/webhooks.
WEBHOOK_MAX_BYTES = env.int("WEBHOOK_MAX_BYTES", default=256 * 1024)
# The inbox relay in each worker hands stored notifications to the broker; it looks again after
# this many seconds when there was nothing to hand over (0: no relay, the sweep alone enqueues).
INBOX_RELAY_INTERVAL = env.float("INBOX_RELAY_INTERVAL", default=0.2)
# /healthz/ready is "degraded" when no relay round was seen for this long (0: not checked), or the
# inbox's backlog is past these many rows or its oldest row waited this long (partner/inbox/health.py).
INBOX_RELAY_STALE_SECONDS = env.int("INBOX_RELAY_STALE_SECONDS", default=60)
INBOX_BACKLOG_WARN_ROWS = env.int("INBOX_BACKLOG_WARN_ROWS", default=1000)
INBOX_BACKLOG_WARN_SECONDS = env.int("INBOX_BACKLOG_WARN_SECONDS", default=300)
# A webhook signed with one product's secret but naming another is answered 401 and kept as `refused`
# (partner/inbox/intake.py): its headers, its body's digest and its first INBOX_REFUSED_EXCERPT_BYTES
# only; at most INBOX_REFUSED_MAX_PER_WINDOW rows per signing product every
# INBOX_REFUSED_WINDOW_SECONDS, the rest counted (partner_webhooks_refused_unstored) and not stored.
INBOX_REFUSED_EXCERPT_BYTES = env.int("INBOX_REFUSED_EXCERPT_BYTES", default=2048)
INBOX_REFUSED_MAX_PER_WINDOW = env.int("INBOX_REFUSED_MAX_PER_WINDOW", default=100)
INBOX_REFUSED_WINDOW_SECONDS = env.int("INBOX_REFUSED_WINDOW_SECONDS", default=3600)
