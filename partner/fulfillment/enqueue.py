"""How the fulfillment's tasks are handed to a worker: one function per task, after commit.

The task names are defined here and used by `tasks.py` to register the tasks, so a name
is written once. See `partner.core.enqueue` for why tasks are published by name.
"""

from partner.core.enqueue import enqueue_after_commit
from partner.core.retries import OUTAGE_SINCE, RATE_LIMITED_SINCE

ORDER_RUN_TASK = "fulfillment.order_run"
SWEEP_TASK = "fulfillment.sweep"
RECONCILE_TASK = "fulfillment.reconcile"
OVERDUE_TASK = "fulfillment.overdue"
STAFF_NOTICE_TASK = "fulfillment.staff_notice"


def order_run_enqueue(
    order_id: int,
    *,
    countdown: float | None = None,
    rate_limited_since: float | None = None,
    outage_since: float | None = None,
) -> None:
    """Have a worker run the order (what is left of its work: its steps, its waiting deliveries) once
    the caller's transaction commits (and `countdown` seconds later when given). `rate_limited_since`:
    when the service first asked the order to wait, `outage_since` when a service of ours it waits
    for went away (`partner.core.retries`), carried to the task."""
    waited = {} if rate_limited_since is None else {RATE_LIMITED_SINCE: rate_limited_since}
    if outage_since is not None:
        waited[OUTAGE_SINCE] = outage_since
    enqueue_after_commit(ORDER_RUN_TASK, countdown=countdown, order_id=order_id, **waited)


def staff_notice_enqueue(order_id: int, notice: str) -> None:
    """Have a worker e-mail staff the order's `notice` (`partner.fulfillment.staff.notices`) after commit."""
    enqueue_after_commit(STAFF_NOTICE_TASK, order_id=order_id, notice=notice)
