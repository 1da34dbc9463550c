"""Nothing accepted is lost: re-enqueue stalled trackers, and start transactions we never heard of.

`trackers_left_hand_back` enqueues at once the active trackers whose worker died holding them
(their lease ran out unreleased; every worker looks every few seconds). `trackers_sweep` finds
active trackers whose task was lost (broker down when it was enqueued, or a worker killed
before it took the tracker: see `partner.core.leases`) and enqueues them again.
`transactions_reconcile` lists the service's transactions (endpoint #7, every page) and opens
a tracker for each one we have none for, so a lost webhook delays an order and never loses it;
it also completes a delivered order whose "processed" callback was lost, when the list says the
transaction is completed.

Assumption about the list's `status` (the spec shows the field without its values): it is the
status of the transaction's latest response, so `completed` means the service holds our final
response. An order we answered with `processing` (an action result) is not completed this way:
staff confirm it by hand in the admin.
Both are safe to run at any time and from several workers at once: the unique transaction id
decides who opens a tracker, and a tracker's lease decides who works on it.
"""

import logging

from partner.core.leases import leases_expired_free
from partner.fulfillment.enqueue import tracker_fulfill_enqueue
from partner.fulfillment.models import ACTIVE_STATUSES, Tracker
from partner.fulfillment.selectors import trackers_awaiting_confirmation, trackers_stalled
from partner.fulfillment.services import tracker_complete, tracker_open
from partner.platform import client

logger = logging.getLogger(__name__)

# Statuses of a service transaction that need nothing more from us.
FINISHED_SERVICE_STATUSES = {"completed", "cancelled", "canceled"}
# The status that says the service holds our final response.
COMPLETED_SERVICE_STATUS = "completed"


def trackers_left_hand_back() -> int:
    """Hand the active trackers whose worker died holding them to a worker again; how many."""
    ids = leases_expired_free(Tracker.objects.filter(status__in=ACTIVE_STATUSES))
    for tracker_id in ids:
        tracker_fulfill_enqueue(tracker_id)
    return len(ids)


def trackers_sweep(*, limit: int = 500) -> int:
    """Hand every stalled tracker to a worker again; how many."""
    ids = list(trackers_stalled().values_list("pk", flat=True)[:limit])
    for tracker_id in ids:
        tracker_fulfill_enqueue(tracker_id)
    if ids:
        logger.info("sweep: %d stalled tracker(s) enqueued again", len(ids))
    return len(ids)


def _product_name(item: dict) -> str:
    product = item.get("product")
    return str(product.get("name") or "") if isinstance(product, dict) else ""


def _unknown_open(batch: list[dict]) -> int:
    """Open a tracker for each unfinished transaction of `batch` we have none for; how many."""
    ids = [item["id"] for item in batch]
    known = set(Tracker.objects.filter(transaction_id__in=ids).values_list("transaction_id", flat=True))
    opened = 0
    for item in batch:
        if item["id"] in known or str(item.get("status", "")).lower() in FINISHED_SERVICE_STATUSES:
            continue
        _, created = tracker_open(transaction_id=item["id"], product_name=_product_name(item))
        if created:
            opened += 1
            logger.warning("reconcile: transaction %s had no tracker (webhook lost?)", item["id"])
    return opened


def _awaiting_complete(batch: list[dict], awaiting: set[str]) -> int:
    """Complete the delivered orders of `batch` whose callback was lost and that the list says are done."""
    confirmed = 0
    for item in batch:
        if item["id"] in awaiting and str(item.get("status", "")).lower() == COMPLETED_SERVICE_STATUS:
            tracker_complete(transaction_id=item["id"], because="the service's transaction list says completed")
            logger.warning("reconcile: transaction %s completed without its callback (callback lost?)", item["id"])
            confirmed += 1
    return confirmed


def transactions_reconcile() -> int:
    """Open and enqueue a tracker for every unfinished service transaction we have no tracker for, and
    complete the delivered orders awaiting confirmation that the list says are completed; how many
    trackers were opened."""
    awaiting = set(trackers_awaiting_confirmation().values_list("transaction_id", flat=True))
    batch = []
    opened = 0
    for item in client.iter_transactions():
        raw = getattr(item, "raw", item)
        if isinstance(raw, dict) and raw.get("id"):
            batch.append(raw)
        if len(batch) >= 200:
            _awaiting_complete(batch, awaiting)
            opened += _unknown_open(batch)
            batch = []
    _awaiting_complete(batch, awaiting)
    return opened + _unknown_open(batch)
