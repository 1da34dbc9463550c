"""Fault injection: which call of which endpoint fails, slows down or drops its webhook.

Rules come from settings (SANDBOX_FAULTS, a list of dicts with the FaultRule
fields except `remaining`) and from FaultRule rows (admin form, or `fault_set` below). The
rows are read at most once a second per process, so a busy sandbox does not
pay a query per call; `rules_forget()` (called by `fault_set`, `faults_clear` and the
admin on every change) makes this process see a change at once. A rule limited to the
next N calls is consumed with one conditional UPDATE, so counting stays exact
across threads and processes.
"""

import random
import threading
import time
from dataclasses import dataclass

from django.conf import settings
from django.db.models import F

from .errors import refused
from .models import FaultRule

_CACHE_SECONDS = 1.0
_lock = threading.Lock()
_cached: tuple[float, list] = (0.0, [])


@dataclass(frozen=True)
class Fault:
    """What to do to one call: wait `latency` seconds, then answer `status` (None: answer normally)."""

    status: int | None = None
    latency: float = 0.0
    retry_after: int = 1
    drop: bool = False


NO_FAULT = Fault()


def rules_forget() -> None:
    global _cached
    with _lock:
        _cached = (0.0, [])


def _rules() -> list:
    global _cached
    now = time.monotonic()
    stamp, rules = _cached
    if now - stamp < _CACHE_SECONDS and stamp:
        return rules
    rules = list(FaultRule.objects.filter(active=True).order_by("id"))
    with _lock:
        _cached = (now, rules)
    return rules


def _settings_rules() -> list[FaultRule]:
    return [FaultRule(**{"active": True, **item}) for item in settings.SANDBOX_FAULTS]


def _consume(rule: FaultRule) -> bool:
    """Take one of the rule's remaining calls; False when none is left."""
    if rule.remaining is None:
        return True
    if rule.pk is None:  # a settings rule has no row to count on: `remaining` is ignored there
        return True
    return bool(FaultRule.objects.filter(pk=rule.pk, remaining__gt=0).update(remaining=F("remaining") - 1))


def fault_for(endpoint: str) -> Fault:
    """The fault to apply to this call of `endpoint` (NO_FAULT most of the time)."""
    rules = _rules()
    settings_rules = _settings_rules() if settings.SANDBOX_FAULTS else []
    if not rules and not settings_rules:
        return NO_FAULT
    status, latency, retry_after, drop = None, 0.0, 1, False
    for rule in [*settings_rules, *rules]:
        if rule.endpoint not in (endpoint, FaultRule.Endpoint.ANY):
            continue
        if (
            rule.endpoint == FaultRule.Endpoint.ANY
            and endpoint == FaultRule.Endpoint.WEBHOOK
            and not rule.drop_webhooks
        ):
            continue  # an error status for "every endpoint" means the REST endpoints
        if rule.rate < 1.0 and random.random() >= rule.rate:
            continue
        if not _consume(rule):
            continue
        latency += rule.latency or 0.0
        if rule.drop_webhooks and endpoint == FaultRule.Endpoint.WEBHOOK:
            drop = True
        if rule.status and status is None:
            status, retry_after = rule.status, rule.retry_after
    if status is None and not latency and not drop:
        return NO_FAULT
    return Fault(status=status, latency=latency, retry_after=retry_after, drop=drop)


def fault_set(
    *,
    endpoint: str = FaultRule.Endpoint.ANY,
    status: int | None = None,
    rate: float = 1.0,
    latency: float = 0.0,
    drop_webhooks: bool = False,
    count: int | None = None,
    retry_after: int = 1,
) -> FaultRule:
    """Add a fault rule: `count` limits it to the next N matching calls."""
    if endpoint not in FaultRule.Endpoint.values:
        raise refused(f"unknown endpoint {endpoint!r}; one of {FaultRule.Endpoint.values}")
    if status is not None and not (status == 429 or 500 <= status <= 599):
        raise refused("a fault status is 429 or 5xx")
    if not 0.0 <= rate <= 1.0 or latency < 0 or (count is not None and count < 0):
        raise refused("rate is 0..1, latency and count are not negative")
    if drop_webhooks and endpoint not in (FaultRule.Endpoint.WEBHOOK, FaultRule.Endpoint.ANY):
        raise refused("drop_webhooks applies to the 'webhook' endpoint")
    rule = FaultRule.objects.create(
        endpoint=endpoint,
        status=status,
        rate=rate,
        latency=latency,
        drop_webhooks=drop_webhooks,
        remaining=count,
        retry_after=retry_after,
    )
    rules_forget()
    return rule


def faults_clear() -> int:
    deleted, _ = FaultRule.objects.all().delete()
    rules_forget()
    return deleted
