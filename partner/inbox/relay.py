"""The inbox's relay: stored webhook notifications handed to the broker, a moment after each request.

The webhook request only stores the notification; the relay hands stored rows to the broker
(`outbox.notifications_relay`) as a chore of the workers' housekeeping (`partner.core.housekeeping`:
a thread of every worker's main process), so a deployment needs no extra process: relays in
several workers share the rows without waiting on each other. It runs every INBOX_RELAY_INTERVAL
seconds when there is nothing to hand over, and again at once while there is; 0 turns it off in
the workers (for a deployment that runs `manage.py inbox_relay` apart; the periodic sweep still
enqueues what waits, only later).
"""

import time

from partner.core.housekeeping import Chore
from partner.core.leases import lease_seconds
from partner.inbox.health import relay_round_record
from partner.inbox.outbox import notifications_relay

BATCH = 200
_recorded_at = 0.0


def relay_round() -> bool:
    """One round: hand up to BATCH stored notifications over; True when a full batch went (more may
    wait). The round is recorded for /healthz/ready, at most every third of LEASE_SECONDS."""
    global _recorded_at
    if time.monotonic() >= _recorded_at:
        relay_round_record()
        _recorded_at = time.monotonic() + lease_seconds() / 3
    return notifications_relay(limit=BATCH) >= BATCH


def relay_chore(*, interval: float) -> Chore:
    """The relay as a housekeeping chore, run every `interval` seconds when idle."""
    return Chore(name="inbox relay", run=relay_round, interval=interval)
