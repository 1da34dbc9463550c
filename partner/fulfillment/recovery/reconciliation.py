"""Nothing accepted is lost: start the transactions we never heard of, complete the ones we missed.

`transactions_reconcile` reads the service's transaction list (endpoint #7) and opens an order
for each unfinished transaction we have none for, so a lost webhook delays an order and never
loses it; it also completes a delivered order whose "processed" callback was lost, when the list
says the transaction is completed.

Two passes, so that a run does not cost more as the list grows:
- the *cheap pass* (every RECONCILE_INTERVAL) reads only the end of the list: from the position
  where the last pass stopped, less the MARKER_SIZE items before it, to the end (one call while at
  most PAGE_SIZE - MARKER_SIZE = 40 transactions are new), plus, for each delivered order awaiting
  confirmation that lies before that, the page at the position where a pass saw it unfinished
  (`watched`; at most AWAITING_PAGES_MAX calls, newest first);
- the *full pass* reads every page, as every run once did: in the run that finds no full pass
  yet, or RECONCILE_FULL_INTERVAL (a day) passed since the last one began (after that run's cheap
  pass), when the cheap pass finds the list not as the assumptions below say, or when asked
  (`reconcile` task with `full=True`). One that fails is due again at the next run; one whose
  worker was killed waits for the next due time (its start is recorded first, so that a long one
  is not started again by the next run). The cheap pass runs whatever became of it.
Where a pass stopped is one `ReconciliationState` row (the cache may be one process's).

Assumptions about the list (the spec shows `start`, `limit` and `X-Total-Count`, no filter, no order):
- It is append-only in creation order: an item keeps its position and a new transaction is added
  at the end, so the positions from the saved one up hold every transaction new since. Checked
  by each cheap pass: the total must not have shrunk and the MARKER_SIZE items before the saved
  position must be the ones seen there (an insertion or a removal before it moves them), and an
  awaiting order's transaction must still be at its position; otherwise it runs the full pass.
  An item replaced in place further back is not seen by that check: the daily full pass finds it.
- `status` of an item is the status of the transaction's latest response, so `completed` means
  the service holds our final response. An order we answered with `processing` (an action
  result) is not completed this way: staff confirm it by hand in the admin. A delivered order
  whose position is not watched (more than WATCH_LIMIT unfinished, or more awaiting pages than
  AWAITING_PAGES_MAX) is completed by the next full pass, or by staff.
Both are safe to run at any time and from several workers at once: the unique transaction id
decides who opens an order, an order's lease decides who works on it, and a saved position is
only ever one whose items before it were all read.
"""

import logging
from collections import deque
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from partner.fulfillment.models import FINAL_STATUSES, Order, ReconciliationState
from partner.fulfillment.orders.selectors import orders_awaiting_confirmation
from partner.fulfillment.orders.services import order_complete, order_open
from partner.platform import client
from partner.platform.errors import ServiceError

logger = logging.getLogger(__name__)

# Statuses of a service transaction that need nothing more from us.
FINISHED_SERVICE_STATUSES = {"completed", "cancelled", "canceled"}
# The status that says the service holds our final response.
COMPLETED_SERVICE_STATUS = "completed"

STATE_NAME = "transactions"  # the ReconciliationState row of the list #7
PAGE_SIZE = client.MAX_PAGE_SIZE
MARKER_SIZE = 10  # items before the saved position that must be unchanged for the cheap pass to trust it
AWAITING_PAGES_MAX = 4  # pages a cheap pass reads, at most, for awaiting orders before its window
WATCH_LIMIT = 2000  # positions of unfinished transactions kept (the newest)
BATCH = 200  # items looked up together in our orders
_FINAL = FINAL_STATUSES


class ListChanged(Exception):
    """The list is not as the saved position says: the cheap pass cannot trust positions."""


def _product_name(item: dict) -> str:
    product = item.get("product")
    return str(product.get("name") or "") if isinstance(product, dict) else ""


def _finished(item: dict) -> bool:
    return str(item.get("status", "")).lower() in FINISHED_SERVICE_STATUSES


def _unknown_open(batch: list[dict]) -> int:
    """Open an order for each unfinished transaction of `batch` we have none for; how many."""
    ids = [item["id"] for item in batch]
    known = set(Order.objects.filter(transaction_id__in=ids).values_list("transaction_id", flat=True))
    opened = 0
    for item in batch:
        if item["id"] in known or _finished(item):
            continue
        _, created, _ = order_open(transaction_id=item["id"], product_name=_product_name(item))
        if created:
            opened += 1
            logger.warning("reconcile: transaction %s had no order (webhook lost?)", item["id"])
    return opened


def _awaiting_complete(batch: list[dict], awaiting: set[str]) -> int:
    """Complete the delivered orders of `batch` whose callback was lost and that the list says are done."""
    confirmed = 0
    for item in batch:
        if item["id"] in awaiting and str(item.get("status", "")).lower() == COMPLETED_SERVICE_STATUS:
            order_complete(transaction_id=item["id"], because="the service's transaction list says completed")
            logger.warning("reconcile: transaction %s completed without its callback (callback lost?)", item["id"])
            awaiting.discard(item["id"])
            confirmed += 1
    return confirmed


def _raw(item) -> dict:
    raw = getattr(item, "raw", item)
    return raw if isinstance(raw, dict) else {}


class _Reading:
    """What a pass does with the items it reads, in order from `position`: opens the unknown, completes
    the awaiting (in batches), and remembers the last ids read and where the unfinished ones are."""

    def __init__(self, position: int):
        self.position = position
        self.awaiting = set(orders_awaiting_confirmation().values_list("transaction_id", flat=True))
        self.opened = 0
        self.tail = deque(maxlen=MARKER_SIZE)
        self.unfinished: dict[str, int] = {}
        self.finished: set[str] = set()
        self._batch: list[dict] = []

    def read(self, item) -> None:
        raw = _raw(item)
        self.tail.append(raw.get("id"))
        if raw.get("id"):
            self._batch.append(raw)
            if _finished(raw):
                self.finished.add(raw["id"])
            else:
                self.unfinished[raw["id"]] = self.position
        self.position += 1
        if len(self._batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        _awaiting_complete(self._batch, self.awaiting)
        self.opened += _unknown_open(self._batch)
        self._batch = []


def _state_write(**fields) -> None:
    ReconciliationState.objects.update_or_create(name=STATE_NAME, defaults=fields)


def _watched_kept(watched: dict[str, int]) -> dict[str, int]:
    """The entries of `watched` whose order is not finished on our side: the newest WATCH_LIMIT."""
    ids, open_ids = list(watched), set()
    for first in range(0, len(ids), 500):
        rows = Order.objects.filter(transaction_id__in=ids[first : first + 500]).exclude(status__in=_FINAL)
        open_ids.update(rows.values_list("transaction_id", flat=True))
    kept = sorted(((position, tid) for tid, position in watched.items() if tid in open_ids), reverse=True)
    return {tid: position for position, tid in kept[:WATCH_LIMIT]}


def _full_pass_due(state: ReconciliationState | None) -> str | None:
    """Why this run must read every page, or None when the cheap pass will do."""
    if state is None or state.full_pass_at is None:
        return "no full pass yet"
    if state.full_pass_at <= timezone.now() - timedelta(seconds=settings.RECONCILE_FULL_INTERVAL):
        return "due (RECONCILE_FULL_INTERVAL)"
    return None


def transactions_reconcile(*, full: bool = False) -> int:
    """Open and enqueue an order for every unfinished service transaction we have no order for, and
    complete the delivered orders awaiting confirmation that the list says are completed; how many
    orders were opened.

    The cheap pass whenever a full pass has saved a position, then the full pass when due, asked for
    (`full`) or the list is not as assumed (see the module): a full pass that fails, or outlasts the
    task's time limit, never keeps the cheap pass from seeing new transactions.
    """
    state = ReconciliationState.objects.filter(name=STATE_NAME).first()
    reason = "asked for" if full else _full_pass_due(state)
    opened = 0
    if not full and state is not None and state.full_pass_at is not None:
        try:
            opened += _cheap_pass(state)
        except ListChanged as exc:
            reason = str(exc)
            logger.warning("reconcile: %s; reading every page instead", reason)
    if reason is None:
        return opened
    return opened + _full_pass(state, reason=reason)


def _full_pass(state: ReconciliationState | None, *, reason: str) -> int:
    """Every page of the list; saves where it ended and when it began."""
    began = state.full_pass_at if state else None
    # Recorded first: a full pass that outlasts RECONCILE_INTERVAL is not started again by the next run.
    _state_write(full_pass_at=timezone.now())
    reading = _Reading(0)
    try:
        for item in client.iter_transactions():
            reading.read(item)
        reading.flush()
    except BaseException:
        _state_write(full_pass_at=began)  # due again at the next run
        raise
    _state_write(position=reading.position, marker=list(reading.tail), watched=_watched_kept(reading.unfinished))
    logger.info("reconcile: full pass (%s): %d item(s), %d opened", reason, reading.position, reading.opened)
    return reading.opened


def _cheap_pass(state: ReconciliationState) -> int:
    """The end of the list from the saved position (and the pages of older awaiting orders); raises
    ListChanged when the list is not as the saved position says."""
    start = max(0, state.position - len(state.marker))
    try:
        page = client.list_transactions_page(start=start, limit=PAGE_SIZE)
    except ServiceError as exc:
        if exc.transient:
            raise
        raise ListChanged(f"the list refused start={start} ({exc})") from exc
    if page.total < state.position:
        raise ListChanged(f"the list shrank from {state.position} to {page.total} item(s)")
    if [_raw(item).get("id") for item in page.items[: len(state.marker)]] != state.marker:
        raise ListChanged(f"the items before position {state.position} are not the ones seen there")
    reading = _Reading(start)
    # Older awaiting orders first: its position checks come before this pass changes anything.
    calls = 1 + _awaiting_pages_read(reading, state.watched, before=start)
    while True:
        for item in page.items:
            reading.read(item)
        if page.next_start is None:
            break
        page, calls = client.list_transactions_page(start=page.next_start, limit=PAGE_SIZE), calls + 1
    reading.flush()
    watched = {**state.watched, **reading.unfinished}
    watched = {tid: position for tid, position in watched.items() if tid not in reading.finished}
    _state_write(position=reading.position, marker=list(reading.tail), watched=_watched_kept(watched))
    logger.info(
        "reconcile: cheap pass from %d: %d call(s), %d item(s), %d opened",
        start,
        calls,
        reading.position - start,
        reading.opened,
    )
    return reading.opened


def _awaiting_pages_read(reading: _Reading, watched: dict[str, int], *, before: int) -> int:
    """Read the items of the awaiting orders watched at a position before `before`, newest first, at
    most AWAITING_PAGES_MAX pages; how many calls. Raises ListChanged, before it changes anything, when
    one is not at its position."""
    wanted = {watched[tid]: tid for tid in reading.awaiting if watched.get(tid, before) < before}
    positions = sorted(wanted, reverse=True)
    found = []
    calls = 0
    while positions and calls < AWAITING_PAGES_MAX:
        first = max(0, positions[0] - PAGE_SIZE + 1)
        page = client.list_transactions_page(start=first, limit=positions[0] - first + 1)
        calls += 1
        for position in [position for position in positions if position >= first]:
            index = position - first
            item = _raw(page.items[index]) if index < len(page.items) else {}
            if item.get("id") != wanted[position]:
                raise ListChanged(f"transaction {wanted[position]} is no longer at position {position}")
            found.append(item)
            if _finished(item):
                reading.finished.add(item["id"])
        positions = [position for position in positions if position < first]
    _awaiting_complete(found, reading.awaiting)
    if positions:
        logger.info("reconcile: %d awaiting order(s) further back are left to the full pass", len(positions))
    return calls
