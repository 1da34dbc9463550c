"""Nothing accepted is lost: re-enqueue stalled trackers, and start transactions we never heard of.

`trackers_sweep` finds active trackers whose task was lost (broker down when
it was enqueued, or a worker killed) and enqueues them again.
`transactions_reconcile` lists the service's transactions (endpoint #7, every
page) and opens a tracker for each one we have none for, so a lost webhook
delays an order and never loses it. Both are safe to run at any time and from
several workers at once: the unique transaction id decides who opens a tracker,
and a tracker's claim decides who works on it.
"""

import logging
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings

from partner.fulfillment.models import Tracker
from partner.fulfillment.services import tracker_open, trackers_stalled
from partner.platform import client

logger = logging.getLogger(__name__)

# Statuses of a service transaction that need nothing more from us.
FINISHED_SERVICE_STATUSES = {"completed", "cancelled", "canceled"}


def stall_after() -> timedelta:
    return timedelta(seconds=settings.TRACKER_STALL_SECONDS)


def trackers_sweep(*, enqueue: Callable[[int], bool], limit: int = 500) -> int:
    ids = list(trackers_stalled(older_than=stall_after()).values_list("pk", flat=True)[:limit])
    sent = sum(1 for tracker_id in ids if enqueue(tracker_id))
    if ids:
        logger.info("sweep: %d stalled tracker(s), %d enqueued", len(ids), sent)
    return sent


def transactions_reconcile(*, enqueue: Callable[[int], bool]) -> int:
    """Open and enqueue a tracker for every unfinished service transaction we have no tracker for."""
    known = set()
    batch = []
    opened = 0

    def flush():
        nonlocal opened
        ids = [item["id"] for item in batch]
        known.update(Tracker.objects.filter(transaction_id__in=ids).values_list("transaction_id", flat=True))
        for item in batch:
            if item["id"] in known or str(item.get("status", "")).lower() in FINISHED_SERVICE_STATUSES:
                continue
            product_name = (item.get("product") or {}).get("name", "") if isinstance(item.get("product"), dict) else ""
            tracker, created = tracker_open(transaction_id=item["id"], product_name=product_name)
            if created:
                opened += 1
                logger.warning("reconcile: transaction %s had no tracker (webhook lost?)", item["id"])
                enqueue(tracker.pk)
        batch.clear()

    for item in client.iter_transactions():
        raw = getattr(item, "raw", item)
        if isinstance(raw, dict) and raw.get("id"):
            batch.append(raw)
        if len(batch) >= 200:
            flush()
    flush()
    return opened
