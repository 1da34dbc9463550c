"""Retention: how long borrowers' personal data is kept, and the purge that holds to it.

Loan data, reports and the raw notifications are borrowers' personal data: each kind is kept for
the days of its RETENTION_* setting (config/settings/retention.py; 0 keeps it for ever), counted from
when its row was finished (a notification processed, an order completed or failed), then purged.
Purging usually *erases* the personal fields and keeps the row's skeleton (ids, states, times) for
the dashboard and for dedupe; a few kinds *delete* whole rows later.

Each app owns what it keeps and how it is purged: its `retention` module holds each kind's plan (how
many rows are past the cut-off) and purge (erase or delete them), and the app's AppConfig.ready
registers them with `purges_register`, as every registry is filled (never at a module's import): this
layer knows no app. The daily task `core.purge` and
`manage.py purge [--dry-run]` both run `purge_run` / `purge_plan`.

A purge works in batches of primary keys (BATCH_SIZE rows per UPDATE or DELETE, each committed on
its own), so a large table is never locked for long and an interrupted purge keeps what it did;
the next run goes on from there. Logs say kinds, counts and dates, never data.

Never an open order: the fulfillment says which transactions have an open order
(`transactions_open_register`); the sandbox, which may not import it, asks `transactions_open`.
"""

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.utils import timezone

logger = logging.getLogger(__name__)

BATCH_SIZE = 1000  # rows per UPDATE or DELETE: short locks, bounded memory

ERASE = "erase"  # the personal fields emptied, the row kept
DELETE = "delete"  # the row deleted


@dataclass(frozen=True)
class PurgeKind:
    kind: str  # what the rows are, in the plural: "notification bodies"
    setting: str  # the RETENTION_* setting giving its days
    action: str  # ERASE or DELETE
    plan: Callable[[datetime], int]  # (cut-off) -> rows past it
    purge: Callable[[datetime, int], Iterable[int]]  # (cut-off, batch size) -> rows erased or deleted, per batch


@dataclass(frozen=True)
class PurgeOutcome:
    """One kind's plan or purge: `rows` past the cut-off (plan) or erased/deleted (purge)."""

    kind: str
    action: str
    setting: str
    days: int
    cutoff: datetime | None  # None: kept for ever
    rows: int = 0
    error: str = ""  # the exception's type when the kind's purge failed (its earlier batches stay done)

    def as_dict(self) -> dict:
        cutoff = self.cutoff.isoformat() if self.cutoff else None
        return {"kind": self.kind, "action": self.action, "rows": self.rows, "cutoff": cutoff, "error": self.error}


# kind -> how it is planned and purged. Registered by each app's `retention` module.
_kinds: dict[str, PurgeKind] = {}
# Which of some transaction ids have an open order: told by the fulfillment.
_open_transactions: list[Callable[[list[str]], set[str]]] = []


def purges_register(kinds: Iterable[PurgeKind]) -> None:
    """Register the kinds an app purges (its retention module's PURGES), in the order they run.
    Each kind's `plan(cutoff)` counts the rows past `cutoff`; `purge(cutoff, batch_size)` erases or
    deletes them, yielding how many rows each batch did (so a purge cut short still says what it did)."""
    for kind in kinds:
        if kind.action not in (ERASE, DELETE):
            raise ValueError(f"purge action must be {ERASE!r} or {DELETE!r}")
        _kinds[kind.kind] = kind


def transactions_open_register(finder: Callable[[list[str]], set[str]]) -> None:
    if finder not in _open_transactions:
        _open_transactions.append(finder)


def transactions_open(transaction_ids: Iterable[str]) -> set[str]:
    """Those of `transaction_ids` whose order is open. Every one of them when no app can tell: a
    purge that cannot know leaves the rows alone."""
    ids = list(dict.fromkeys(transaction_ids))
    if not _open_transactions:
        return set(ids)
    found = set()
    for finder in _open_transactions:
        found |= finder(ids)
    return found


def _retention_settings() -> dict[str, int]:
    """Every RETENTION_* setting by name (config/settings/retention.py), read now: a
    change holds at once. A kind registered with another name is a programming error (KeyError)."""
    return {
        "RETENTION_NOTIFICATION_BODY_DAYS": settings.RETENTION_NOTIFICATION_BODY_DAYS,
        "RETENTION_NOTIFICATION_DAYS": settings.RETENTION_NOTIFICATION_DAYS,
        "RETENTION_REFUSED_NOTIFICATION_DAYS": settings.RETENTION_REFUSED_NOTIFICATION_DAYS,
        "RETENTION_ORDER_DATA_DAYS": settings.RETENTION_ORDER_DATA_DAYS,
        "RETENTION_DOCUMENT_DAYS": settings.RETENTION_DOCUMENT_DAYS,
        "RETENTION_STEP_DAYS": settings.RETENTION_STEP_DAYS,
        "RETENTION_SANDBOX_DAYS": settings.RETENTION_SANDBOX_DAYS,
    }


def retention_days(setting: str) -> int:
    days = _retention_settings()[setting]
    if not isinstance(days, int) or days < 0:
        raise ImproperlyConfigured(f"{setting} must be a number of days, 0 or more (0 keeps for ever)")
    return days


def retention_cutoff(setting: str, *, now: datetime | None = None) -> datetime | None:
    """Rows finished before this moment are past retention; None when the kind is kept for ever."""
    days = retention_days(setting)
    return (now or timezone.now()) - timedelta(days=days) if days else None


def purge_kinds() -> list[PurgeKind]:
    return list(_kinds.values())


def pk_batches(queryset: models.QuerySet, *, size: int = BATCH_SIZE) -> Iterator[list]:
    """The primary keys of `queryset`, `size` at a time in key order. Each page is read after the
    caller handled the one before (keyset: rows it erased or deleted are not skipped nor seen twice)."""
    last = None
    ordered = queryset.order_by("pk")
    while True:
        page = ordered if last is None else ordered.filter(pk__gt=last)
        ids = list(page.values_list("pk", flat=True)[:size])
        if not ids:
            return
        yield ids
        last = ids[-1]


def _outcome(kind: PurgeKind, now: datetime) -> PurgeOutcome:
    return PurgeOutcome(
        kind=kind.kind,
        action=kind.action,
        setting=kind.setting,
        days=retention_days(kind.setting),
        cutoff=retention_cutoff(kind.setting, now=now),
    )


def purge_plan(*, now: datetime | None = None) -> list[PurgeOutcome]:
    """What a purge would do now, kind by kind: nothing is changed."""
    now = now or timezone.now()
    plans = []
    for kind in purge_kinds():
        outcome = _outcome(kind, now)
        if outcome.cutoff is not None:
            outcome = replace(outcome, rows=kind.plan(outcome.cutoff))
        plans.append(outcome)
    return plans


def purge_run(*, batch_size: int = BATCH_SIZE, now: datetime | None = None) -> list[PurgeOutcome]:
    """Erase or delete every kind's rows past retention, batch by batch; what was done.

    A kind whose purge fails is reported (its error) and the others still run; its batches done
    before the failure stay done.
    """
    now = now or timezone.now()
    done = []
    for kind in purge_kinds():
        outcome = _outcome(kind, now)
        if outcome.cutoff is None:
            done.append(outcome)
            continue
        rows, error = 0, ""
        try:
            for count in kind.purge(outcome.cutoff, batch_size):
                rows += count
        except SoftTimeLimitExceeded:
            logger.warning(
                "purge of %s cut short by the time limit after %d row(s): the next run goes on", kind.kind, rows
            )
            raise
        except Exception as exc:  # one kind's failure (the database away, a lock timeout) stops only it
            error = type(exc).__name__
            logger.error("purge of %s failed (%s): the rest of it waits for the next run", kind.kind, error)
        if rows:
            verb = "erased" if kind.action == ERASE else "deleted"
            logger.info("purge: %s %d %s (cut-off %s)", verb, rows, kind.kind, outcome.cutoff.isoformat())
        done.append(replace(outcome, rows=rows, error=error))
    return done
