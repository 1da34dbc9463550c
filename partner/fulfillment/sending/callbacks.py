"""The service's callbacks: a transaction event, read and applied to its order.

A "processed" event confirms the delivery it belongs to (`delivery_confirm`), whatever kind of order
it is, and the order is settled by the one rule of `orders.services.order_settle` (completed when
the confirmed delivery is its result or final delivery). A callback that comes before the sender's
record of the PATCH applies what the acceptance means first (`accepted.delivery_accepted`): the
order's moments are announced in the order they happened. Any other event is recorded for staff to
read.

Which delivery a "processed" event confirms: the one whose response version it names (the sender
writes a delivery's `sequence` before its PATCH, so a version always finds its delivery, even when
the callback comes before the sender recorded the PATCH), and the earlier ones not yet confirmed
with it; without a version (the spec's event shows none), the oldest delivery the service accepted
and has not confirmed. Both rest on the service processing our responses in the order it received
them. Each callback takes the order's lock first
(`order_lock`), so two callbacks of one order and the sender's record follow one another: N
accepted PATCHes, N callbacks, N confirmations, however they interleave.
"""

from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from partner.core.checkpoints import checkpoint
from partner.core.leases import lease_free
from partner.fulfillment.enqueue import order_run_enqueue
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.history import step_record, steps_batched
from partner.fulfillment.orders.selectors import work_left
from partner.fulfillment.orders.services import order_lock, order_settle
from partner.fulfillment.orders.states import DELIVERY_MOVES, delivery_move_returning
from partner.fulfillment.sending.accepted import delivery_accepted
from partner.platform import client
from partner.platform.urns import response_processed_event_type

# Confirmed without a line in the order's history: an automated order's says "completed" (its
# result's confirmation), a failed order's "lender_told" (its notice's sending).
SILENT_KINDS = (DeliveryKind.RESULT, DeliveryKind.FAILURE_NOTICE)


def _response_version(raw: dict):
    """The response version an event names, where the service says it (the spec shows the event's
    type only: the sandbox sends `details.responseVersion`, and None means "not said")."""
    for holder in (raw.get("details"), raw.get("data"), raw):
        if isinstance(holder, dict) and "responseVersion" in holder:
            version = holder["responseVersion"]
            return version if isinstance(version, int) and not isinstance(version, bool) else None
    return None


def _confirmable(rows, *, event_id: str):
    """The deliveries of `rows` the event may confirm: those the table lets be confirmed, and none
    once the event confirmed one of the order's (its task run again, a replay: it names the delivery
    it confirmed)."""
    rows = rows.filter(state__in=DELIVERY_MOVES[DeliveryState.CONFIRMED])
    if event_id:
        rows = rows.filter(~Exists(Delivery.objects.filter(order=OuterRef("order"), confirmed_by=event_id)))
    return rows


def _confirmed(rows, *, now, event_id: str) -> list[Delivery]:
    """Confirm the deliveries of `rows` by the event (one UPDATE … RETURNING)."""
    return delivery_move_returning(
        rows, DeliveryState.CONFIRMED, confirmed_at=now, confirmed_by=event_id, updated_at=now
    )


def _version_confirm(deliveries, *, version: int, now, event_id: str) -> tuple[Delivery | None, list[Delivery]]:
    """Confirm the delivery of the named version and, with it, the earlier ones (tried, a lower
    version) not yet confirmed, in one UPDATE … RETURNING: the service processes our responses in
    order, so those it processed before this version were processed too, even if their callbacks
    come later (they then change nothing). Nothing when the named one may not be confirmed. A
    version is one delivery's: the sender writes the next only once one was accepted. Returns the
    named one (None: nothing confirmed) and the earlier ones, in the order of their PATCHes."""
    rows = _confirmable(deliveries, event_id=event_id)
    processed = rows.filter(Q(sequence=version) | Q(sequence__lt=version, attempts__gt=0))
    confirmed = _confirmed(processed.filter(Exists(rows.filter(sequence=version))), now=now, event_id=event_id)
    named = [delivery for delivery in confirmed if delivery.sequence == version]
    earlier = sorted((delivery for delivery in confirmed if delivery.sequence != version), key=lambda d: d.sequence)
    return (named[0] if named else None), earlier


def _oldest_confirm(deliveries, *, now, event_id: str) -> Delivery | None:
    """Confirm the oldest delivery the service accepted (its PATCH's version written, before the
    PATCH, and tried), in one UPDATE … RETURNING; None when none may be."""
    accepted = _confirmable(deliveries, event_id=event_id).filter(sequence__isnull=False, attempts__gt=0)
    first = accepted.order_by("sequence", "id").values("pk")[:1]
    confirmed = _confirmed(Delivery.objects.filter(pk__in=first), now=now, event_id=event_id)
    return confirmed[0] if confirmed else None


def delivery_confirm(*, transaction_id: str, event_id: str, version=None) -> Delivery | None:
    """A "processed" callback confirms the delivery of the response version it names; one that names
    none (or a version we have no record of) confirms the oldest delivery the service accepted and
    has not confirmed (sent, or PATCHed and not yet recorded). The order is then settled
    (`order_settle`). An event applied once (its delivery records it, `confirmed_by`) changes
    nothing when it comes again, nor does a callback that finds nothing to confirm."""
    # The confirmation, the order's move and what they announce, together, under the order's lock:
    # the announcements' receivers may remember what they read for the transaction (`atomic`).
    with announcements.atomic():
        order_id = order_lock(Order.objects.filter(transaction_id=transaction_id))
        if order_id is None:
            return None
        with steps_batched(on_error=False):  # its lines (confirmed, completed) in one INSERT
            delivery = _delivery_confirm(order_id=order_id, event_id=event_id, version=version)
        checkpoint("callback.confirmed")
        return delivery


def _delivery_confirm(*, order_id: int, event_id: str, version) -> Delivery | None:
    now = timezone.now()
    deliveries = Delivery.objects.filter(order=order_id)
    delivery, earlier = None, []
    if version is not None:
        delivery, earlier = _version_confirm(deliveries, version=version, now=now, event_id=event_id)
        if delivery is None and deliveries.filter(sequence=version, state=DeliveryState.CONFIRMED).exists():
            return None  # a replay: its delivery is confirmed
    if delivery is None:
        delivery = _oldest_confirm(deliveries, now=now, event_id=event_id)
    if delivery is None:
        if not deliveries.filter(state=DeliveryState.CONFIRMED).exists():
            step_record(Order(pk=order_id), "event", f"processed ({event_id}), no delivery waiting for it")
        return None
    # Every confirmation is announced, and in the order of the PATCHes, before the completion.
    order = None
    for confirmed in [*earlier, delivery]:
        if confirmed.sent_at is None:
            # Before the sender's record of its PATCH: what the acceptance means comes first (an
            # acknowledgement's announcement before its confirmation's), and the record adds nothing.
            order = order or Order.objects.get(pk=order_id)
            delivery_accepted(order, confirmed, now)
        if confirmed.kind not in SILENT_KINDS:
            step_record(Order(pk=order_id), "confirmed", f"{confirmed.get_kind_display()} ({event_id})")
        announcements.order_announce(order_id=order_id, what=announcements.DELIVERY_CONFIRMED, delivery_id=confirmed.pk)
        order_settle(order_id=order_id, delivery=confirmed, event_id=event_id)
    if order is not None:
        _run_wake(order_id)
    return delivery


def _run_wake(order_id: int) -> None:
    """A delivery confirmed before the sender's record of it may be one whose answer was lost, its
    order given back to wait for this callback (`sender._answer_await`): the deliveries after it are
    handed to a run now (after commit). Not while a run holds the order (it sends them itself)."""
    free = Order.objects.filter(lease_free(timezone.now()), work_left(), pk=order_id)
    if free.exists():
        order_run_enqueue(order_id)


def order_event_handle(*, resource_ref: str) -> str:
    """GET the callback event and apply it to its order. Returns the event type."""
    ref = client.resource_ref_parse(resource_ref)
    event = client.get_event(ref.transaction_id, ref.event_id)
    if event.type == response_processed_event_type():
        delivery_confirm(transaction_id=ref.transaction_id, event_id=ref.event_id, version=_response_version(event.raw))
        return event.type
    order = Order.objects.filter(transaction_id=ref.transaction_id).first()
    if order is not None:
        step_record(order, "event", f"{event.type} ({ref.event_id})")
    return event.type
