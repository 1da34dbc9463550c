"""What happens to an order, announced to whatever sits above the code that makes it happen: one
signal, sent from here.

The connector (`partner.connector`, a layer above) tells a partner's own order system of its
connected orders; the staff's package (`partner.fulfillment.staff`, above the sending and the
automated work inside the fulfillment) e-mails staff of a new order. Neither may be imported by the
code that makes an order's moments happen (the sender's acknowledgement, a delivery confirmed or
refused, the completion, the failure, the decline, an assignment): it calls `order_announce`, and
they receive the signal (connected in their `AppConfig.ready`).

The signal is sent inside the caller's transaction and its receivers run in it (Django signals
are synchronous): what a receiver stores (an event for the partner's system) commits or rolls back
with the move that caused it, and is never lost nor sent for a move that did not happen. A
receiver must not call out of the process; it stores, and a worker sends after the commit.

A transaction that announces several moments of one order it holds locked (a callback's
confirmation and completion) opens itself with `atomic`: its receivers may then remember, for that
transaction only, what they read that its lock keeps true (`remembered`), instead of reading it again
for each announcement.
"""

import contextlib
import contextvars

from django.db import transaction
from django.dispatch import Signal

# Kwargs: order_id (int), what (one of the names below), delivery_id (int or None).
order_announced = Signal()

ACKNOWLEDGED = "acknowledged"  # the acknowledgement reached the service: the order is with its workers
DELIVERY_CONFIRMED = "delivery_confirmed"  # the service processed one of our deliveries
DELIVERY_FAILED = "delivery_failed"  # the service refused one of our deliveries for good
COMPLETED = "completed"  # the service processed our final response
FAILED = "failed"  # the order failed for good
DECLINED = "declined"  # our decline reached the service
TAKEN = "taken"  # the order was assigned: a staff member took it (or took it over), or a system was given it

# What the receivers remember in the current `atomic` block: receiver's name -> its memory. A context
# variable: each thread (and each task of an event loop) has its own, and none outside a block.
_memory: contextvars.ContextVar[dict[str, dict] | None] = contextvars.ContextVar("announced_memory", default=None)


def order_announce(*, order_id: int, what: str, delivery_id: int | None = None) -> None:
    """Tell the receivers, in the caller's transaction, that `what` happened to the order."""
    order_announced.send(sender=order_announce, order_id=order_id, what=what, delivery_id=delivery_id)


@contextlib.contextmanager
def atomic():
    """A transaction (`transaction.atomic`) whose announcements' receivers may remember what they
    read (`remembered`) until it ends, however it ends: the memory goes with the block, on commit
    and on rollback alike, and the next transaction starts with none. For a transaction that takes
    the lock of the order it announces (`services.order_lock`) before its first announcement and
    holds it to its end. Inside another such block, that block's memory and transaction (a
    savepoint): the receivers remember only what a rolled-back savepoint cannot make untrue."""
    if _memory.get() is not None:
        with transaction.atomic():
            yield
        return
    token = _memory.set({})
    try:
        with transaction.atomic():
            yield
    finally:
        _memory.reset(token)


def remembered(receiver: str) -> dict | None:
    """The receiver's memory in the current `atomic` block (a dict it keeps what it likes in, under
    the lock the block holds); None outside one: read again."""
    memory = _memory.get()
    return None if memory is None else memory.setdefault(receiver, {})
