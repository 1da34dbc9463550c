"""Orders nobody is working on that should be: handed to a worker again.

`orders_left_hand_back` runs every few seconds in every worker (its housekeeping loop): the
orders whose worker died holding them (their lease ran out unreleased) are run again at once.
`orders_sweep` runs every SWEEP_INTERVAL (beat): the orders with work left whose task was lost (the
broker away when it was enqueued, a worker killed before it took the order: see
`partner.core.leases`) are run again. Both hand the order to the one task that runs orders.
"""

import logging

from partner.core.leases import leases_expired_free
from partner.fulfillment.enqueue import order_run_enqueue
from partner.fulfillment.models import Order
from partner.fulfillment.orders.selectors import orders_stalled, work_left

logger = logging.getLogger(__name__)


def orders_left_hand_back() -> int:
    """Run again the orders whose worker died holding them; how many."""
    ids = leases_expired_free(Order.objects.filter(work_left()))
    for order_id in ids:
        order_run_enqueue(order_id)
    return len(ids)


def orders_sweep(*, limit: int = 500) -> int:
    """Run again every stalled order; how many."""
    ids = list(orders_stalled().values_list("pk", flat=True)[:limit])
    for order_id in ids:
        order_run_enqueue(order_id)
    if ids:
        logger.info("sweep: %d stalled order(s) run again", len(ids))
    return len(ids)
