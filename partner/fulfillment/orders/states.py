"""The states of an order and of a delivery, and the moves allowed between them: one table each.

Every write of an order's `status` or a delivery's `state` goes through this module. A move is one
conditional UPDATE that matches only the rows whose state the table lets move there, so two workers
racing for one move are decided by the database: one moves the row, the other matches nothing and
changes nothing (a replayed callback, a retry that lost to a completion). A move the table does not
allow from a state known in memory is refused with `MoveNotAllowed`, which names both states.

A small table of our own rather than a state-machine library: the moves here are UPDATEs with a
guard in their WHERE clause (the rows are never saved whole), which is what keeps concurrent workers
right; libraries such as django-fsm guard a model instance in memory and save it, which two
workers holding two copies of one row would both pass.

The order's states (spec, "States and transitions": VALIDATION_REQUESTED when the transaction's
webhook came, REQUEST_COMPLETED when the service processed our response; ours in between):

    VALIDATION_REQUESTED -> IN_PROGRESS         read, checked and worked (the response prepared)
    VALIDATION_REQUESTED -> FAILED              refused before any work (credentials, product)
    IN_PROGRESS          -> RESPONSE_DELIVERED  the automated response sent
    IN_PROGRESS          -> WITH_STAFF          a staff-worked order acknowledged
    WITH_STAFF           -> RESPONSE_DELIVERED  staff's final delivery sent
    WITH_STAFF           -> DECLINED            staff's decline sent
    any open state       -> REQUEST_COMPLETED   the service's "processed" callback (or its list)
    any open state       -> FAILED              a permanent failure, or retries given up
    FAILED               -> VALIDATION_REQUESTED, IN_PROGRESS   staff's retry, or a later genuine
                                                 notification of a transaction a forged one failed

A completion may come before the worker recorded its delivery (the service calls back while our
PATCH returns): so every open state may complete. A completed or declined order moves no more.
"""

from django.db.models import Case, F, QuerySet, Value, When

from partner.core.errors import ApplicationError
from partner.core.returning import update_returning
from partner.fulfillment.models import DeliveryKind, DeliveryState, OrderStatus

_OPEN = (
    OrderStatus.VALIDATION_REQUESTED,
    OrderStatus.IN_PROGRESS,
    OrderStatus.WITH_STAFF,
    OrderStatus.RESPONSE_DELIVERED,
)

# to -> the states an order may move there from.
ORDER_MOVES: dict[str, frozenset[str]] = {
    OrderStatus.VALIDATION_REQUESTED: frozenset({OrderStatus.FAILED}),
    OrderStatus.IN_PROGRESS: frozenset({OrderStatus.VALIDATION_REQUESTED, OrderStatus.FAILED}),
    OrderStatus.WITH_STAFF: frozenset({OrderStatus.VALIDATION_REQUESTED, OrderStatus.IN_PROGRESS}),
    OrderStatus.RESPONSE_DELIVERED: frozenset(
        {OrderStatus.VALIDATION_REQUESTED, OrderStatus.IN_PROGRESS, OrderStatus.WITH_STAFF}
    ),
    OrderStatus.DECLINED: frozenset({OrderStatus.WITH_STAFF}),
    OrderStatus.REQUEST_COMPLETED: frozenset(_OPEN),
    OrderStatus.FAILED: frozenset(_OPEN),
}

# A delivery (`Delivery`, one PATCH we owe the service): waiting, then sent (the service accepted
# the PATCH), then confirmed (its "processed" callback came), or failed for good; a failed one may
# be sent again. A confirmation may come before the sender recorded the PATCH as sent.
DELIVERY_MOVES: dict[str, frozenset[str]] = {
    DeliveryState.PENDING: frozenset({DeliveryState.FAILED}),
    DeliveryState.SENT: frozenset({DeliveryState.PENDING}),
    DeliveryState.CONFIRMED: frozenset({DeliveryState.PENDING, DeliveryState.SENT}),
    DeliveryState.FAILED: frozenset({DeliveryState.PENDING}),
}

# What an order's ending delivery (its result, its final delivery or its decline) says the order
# is, by the delivery's kind and state: the one rule that moves an order from its deliveries
# (`services.order_settle`, called by the sender's record and by the callback, whichever comes
# first). A result or final delivery sent delivers the order, confirmed completes it; a decline
# sent (or confirmed) declines it. Apart from this rule only staff's confirm and the
# reconciliation complete an order (`services.order_complete`).
SETTLED_BY: dict[tuple[str, str], str] = {
    (DeliveryKind.RESULT, DeliveryState.SENT): OrderStatus.RESPONSE_DELIVERED,
    (DeliveryKind.RESULT, DeliveryState.CONFIRMED): OrderStatus.REQUEST_COMPLETED,
    (DeliveryKind.FINAL, DeliveryState.SENT): OrderStatus.RESPONSE_DELIVERED,
    (DeliveryKind.FINAL, DeliveryState.CONFIRMED): OrderStatus.REQUEST_COMPLETED,
    (DeliveryKind.DECLINE, DeliveryState.SENT): OrderStatus.DECLINED,
    (DeliveryKind.DECLINE, DeliveryState.CONFIRMED): OrderStatus.DECLINED,
}


class MoveNotAllowed(ApplicationError):
    """A move the table does not allow (a programming error, or a row another worker moved first).

    `message` names both states; `extra` holds them (`current`, `to`).
    """

    status_code = 409

    def __init__(self, what: str, current: str, to: str):
        super().__init__(f"{what} cannot move from {current} to {to}", extra={"current": current, "to": to})


def order_move_check(current: str, to: str) -> None:
    """Refuse (MoveNotAllowed) the move of an order in `current` to `to` when the table does not allow it."""
    if current not in ORDER_MOVES[to]:
        raise MoveNotAllowed("an order", current, to)


def order_move(rows: QuerySet, to: str, **fields) -> int:
    """Move the orders of `rows` to `to` where the table allows it from their status, writing `fields`
    in the same UPDATE; how many moved (0: none was in a state that may move there)."""
    return rows.filter(status__in=ORDER_MOVES[to]).update(status=to, **fields)


def order_move_returning(rows: QuerySet, to: str, **fields) -> list:
    """`order_move`, returning the orders moved as the UPDATE left them (one statement)."""
    return update_returning(rows.filter(status__in=ORDER_MOVES[to]), status=to, **fields)


def order_move_where_allowed(rows: QuerySet, to: str, **fields) -> int:
    """Write `fields` to the orders of `rows` whatever their status, and move to `to` those the table
    allows (the others keep theirs), in one UPDATE: for what happened whatever came first, as a
    delivery recorded after the service's callback already completed the order."""
    status = Case(When(status__in=ORDER_MOVES[to], then=Value(to)), default=F("status"))
    return rows.update(status=status, **fields)


def delivery_move_check(current: str, to: str) -> None:
    """Refuse (MoveNotAllowed) the move of a delivery in `current` to `to` when the table does not allow it."""
    if current not in DELIVERY_MOVES[to]:
        raise MoveNotAllowed("a delivery", current, to)


def delivery_move(rows: QuerySet, to: str, **fields) -> int:
    """Move the deliveries of `rows` to `to` where the table allows it from their state, writing
    `fields` in the same UPDATE; how many moved."""
    return rows.filter(state__in=DELIVERY_MOVES[to]).update(state=to, **fields)


def delivery_move_returning(rows: QuerySet, to: str, **fields) -> list:
    """`delivery_move`, returning the deliveries moved as the UPDATE left them (one statement)."""
    return update_returning(rows.filter(state__in=DELIVERY_MOVES[to]), state=to, **fields)


def delivery_move_where_allowed_returning(rows: QuerySet, to: str, **fields) -> list:
    """Write `fields` to the deliveries of `rows` whatever their state, and move to `to` those the
    table allows, in one UPDATE that returns them: a delivery recorded as sent after its
    confirmation came keeps CONFIRMED."""
    state = Case(When(state__in=DELIVERY_MOVES[to], then=Value(to)), default=F("state"))
    return update_returning(rows, state=state, **fields)
