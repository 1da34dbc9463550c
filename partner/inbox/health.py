"""The inbox's part of /healthz/ready: is a relay handing stored notifications over, and is the backlog small.

The relay loop (in every worker) records its last round in the shared cache at most every few
seconds; a web process reads it. No round for INBOX_RELAY_STALE_SECONDS means no worker relays:
webhooks are still stored and answered, but nothing is processed until one does (the periodic
sweep also hands them over, later). A backlog past INBOX_BACKLOG_WARN_ROWS rows, or whose oldest
row waits longer than INBOX_BACKLOG_WARN_SECONDS, means the workers do not keep up.
"""

import time

from django.conf import settings
from django.core.cache import cache
from django.db.models import Min
from django.utils import timezone

from partner.inbox.metrics import BACKLOG_STATES
from partner.inbox.models import Notification

RELAY_ROUND_KEY = "inbox:relay:last-round"


def relay_round_record() -> None:
    cache.set(RELAY_ROUND_KEY, time.time(), timeout=None)


def relay_warnings() -> list[str]:
    stale_after = settings.INBOX_RELAY_STALE_SECONDS
    if not stale_after:
        return []
    last = cache.get(RELAY_ROUND_KEY)
    if last is None:
        return ["inbox relay: no round seen yet (is a worker running?)"]
    silent = time.time() - last
    if silent > stale_after:
        return [f"inbox relay: no round for {silent:.0f} s (is a worker running?)"]
    return []


def backlog_warnings() -> list[str]:
    backlog = Notification.objects.filter(state__in=BACKLOG_STATES)
    rows = backlog.count()
    warnings = []
    if rows > settings.INBOX_BACKLOG_WARN_ROWS:
        warnings.append(f"inbox backlog: {rows} notifications not yet processed")
    oldest = backlog.aggregate(oldest=Min("received_at"))["oldest"]
    waited = (timezone.now() - oldest).total_seconds() if oldest else 0
    if waited > settings.INBOX_BACKLOG_WARN_SECONDS:
        warnings.append(f"inbox backlog: the oldest notification has waited {waited:.0f} s")
    return warnings
