"""How the fulfillment's tasks are handed to a worker: one function per task, after commit.

The task names are defined here and used by `tasks.py` to register the tasks, so a name
is written once. See `partner.core.enqueue` for why tasks are published by name.
"""

from partner.core.enqueue import enqueue_after_commit
from partner.core.retries import RATE_LIMITED_SINCE

FULFILL_TASK = "fulfillment.fulfill"
SWEEP_TASK = "fulfillment.sweep"
RECONCILE_TASK = "fulfillment.reconcile"
DELIVERIES_TASK = "fulfillment.deliveries_send"
OVERDUE_TASK = "fulfillment.overdue"


def order_fulfill_enqueue(
    order_id: int, *, countdown: float | None = None, rate_limited_since: float | None = None
) -> None:
    """Have a worker run the order's steps that are not done yet, once the caller's transaction commits
    (and `countdown` seconds later when given). `rate_limited_since`: when the service first asked the
    order to wait (`partner.core.retries`), carried to the task."""
    waited = {} if rate_limited_since is None else {RATE_LIMITED_SINCE: rate_limited_since}
    enqueue_after_commit(FULFILL_TASK, countdown=countdown, order_id=order_id, **waited)


def deliveries_send_enqueue(order_id: int, *, countdown: float | None = None) -> None:
    """Have a worker send the staff's deliveries of the order that wait, in order, after commit."""
    enqueue_after_commit(DELIVERIES_TASK, countdown=countdown, order_id=order_id)
