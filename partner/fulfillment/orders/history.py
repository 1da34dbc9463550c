"""An order's history for the people who read it: one `OrderStep` row per step, failure or action.

A worker's run writes its steps together when it ends (`steps_batched`): one INSERT for the run
instead of one per step, or earlier in a transaction of the run's that is writing anyway
(`steps_atomic`: the sender's record of a PATCH), where the INSERT needs no transaction of its own.
The order's own times (prepared_at, delivered_at, …) and its documents' and deliveries' are what a
resumed run reads; the steps are the history staff read.
"""

import contextlib
import contextvars
import copy

from django.db import transaction
from django.db.models import DateTimeField, F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from partner.core.outbound import kept
from partner.fulfillment.models import Order, OrderStep

_batched_steps: contextvars.ContextVar[list[OrderStep] | None] = contextvars.ContextVar("steps", default=None)


def step_record(order: Order, name: str, detail: str = "", *, actor: str = "") -> None:
    step = OrderStep(order=order, name=name, detail=kept(detail), actor=actor[:150], created_at=timezone.now())
    batch = _batched_steps.get()
    if batch is not None:
        batch.append(step)
    else:
        step.save()


@contextlib.contextmanager
def steps_batched(*, on_error: bool = True):
    """Hold the steps recorded in the block and write them in one INSERT when it ends, however it
    ends (`on_error=False`: only when it ends well, for a block inside a transaction, whose error
    rolls the steps back with the rest: an INSERT into an aborted transaction would hide that
    error). A worker killed in the block loses that run's history lines, never its progress."""
    if _batched_steps.get() is not None:  # inside another batch: its end writes these too
        yield
        return
    batch: list[OrderStep] = []
    token = _batched_steps.set(batch)
    ended_well = False
    try:
        yield
        ended_well = True
    finally:
        _batched_steps.reset(token)
        if batch and (ended_well or on_error):
            OrderStep.objects.bulk_create(batch)


@contextlib.contextmanager
def steps_atomic():
    """A transaction (`transaction.atomic`) that also writes, at its end, the steps the enclosing
    batch holds so far: with what it writes, where at the batch's end they would take a transaction
    of their own (BEGIN, the INSERT, COMMIT). They leave the batch once the block has ended well (a
    nested block: once its savepoint is released, and they are then the outer transaction's, as the
    rest of its work is); a block that fails leaves them for the batch's end. Outside a batch, only
    the transaction."""
    batch = _batched_steps.get()
    with transaction.atomic():
        yield
        held = list(batch or ())
        if held:
            OrderStep.objects.bulk_create([copy.copy(step) for step in held])  # the held ones stay unsaved
    if held:
        del batch[: len(held)]  # a batch grows only at its end (`step_record`): what was written is its start


def first_time(field: str, now):
    """An update expression that keeps an earlier time in `field` and sets `now` otherwise."""
    return Coalesce(F(field), Value(now, output_field=DateTimeField()))
