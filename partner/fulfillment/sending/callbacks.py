"""The service's callbacks: a transaction event, read and applied to its order.

A "processed" event confirms the delivery it belongs to (`delivery_confirm`), whatever kind of order
it is; the order completes when that delivery is its last word (an automated result, a final
delivery). Any other event is recorded for staff to read.
"""

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order
from partner.fulfillment.orders import announcements
from partner.fulfillment.orders.history import step_record
from partner.fulfillment.orders.services import order_complete
from partner.fulfillment.orders.states import DELIVERY_MOVES, delivery_move_returning
from partner.platform import client
from partner.platform.urns import response_processed_event_type

# The deliveries whose confirmation completes the order (a decline ends it when it is sent).
COMPLETING_KINDS = (DeliveryKind.RESULT, DeliveryKind.FINAL)
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


def _confirm(rows, *, now) -> Delivery | None:
    """Confirm the first delivery of `rows` (one UPDATE … RETURNING); None when none may be."""
    first = rows.filter(state__in=DELIVERY_MOVES[DeliveryState.CONFIRMED]).values("pk")[:1]
    confirmed = delivery_move_returning(
        Delivery.objects.filter(pk__in=first), DeliveryState.CONFIRMED, confirmed_at=now, updated_at=now
    )
    return confirmed[0] if confirmed else None


def delivery_confirm(*, transaction_id: str, event_id: str, version=None) -> Delivery | None:
    """A "processed" callback confirms the delivery of the response version it names; one that names
    none (or a version we have no record of) confirms the latest sent, or else the one being sent
    now (the service may call back before our PATCH returns). The order completes when the confirmed
    delivery ends it. A callback that finds nothing to confirm (a replay) changes nothing."""
    with transaction.atomic():  # the confirmation and what it announces, together
        return _delivery_confirm(transaction_id=transaction_id, event_id=event_id, version=version)


def _delivery_confirm(*, transaction_id: str, event_id: str, version) -> Delivery | None:
    now = timezone.now()
    deliveries = Delivery.objects.filter(order__transaction_id=transaction_id)
    delivery = None
    if version is not None:
        delivery = _confirm(deliveries.filter(sequence=version), now=now)
    if delivery is None:
        delivery = _confirm(deliveries.filter(state=DeliveryState.SENT).order_by("-sequence"), now=now)
    if delivery is None:
        # In flight: the first waiting one that was tried (the sender sends them in order).
        delivery = _confirm(
            deliveries.filter(~Q(attempts=0), state=DeliveryState.PENDING).order_by("created_at", "id"), now=now
        )
    if delivery is None:
        replayed = deliveries.filter(state=DeliveryState.CONFIRMED)
        if version is not None:
            replayed = replayed.filter(sequence=version)
        if not replayed.exists():
            order = Order.objects.filter(transaction_id=transaction_id).first()
            if order is not None:
                step_record(order, "event", f"processed ({event_id}), no delivery waiting for it")
        return None
    if delivery.kind not in SILENT_KINDS:
        step_record(Order(pk=delivery.order_id), "confirmed", f"{delivery.get_kind_display()} ({event_id})")
    announcements.order_announce(
        order_id=delivery.order_id, what=announcements.DELIVERY_CONFIRMED, delivery_id=delivery.pk
    )
    if delivery.kind in COMPLETING_KINDS:
        order_complete(transaction_id=transaction_id, event_id=event_id)
    return delivery


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
