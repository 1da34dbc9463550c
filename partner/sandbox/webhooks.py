"""Webhook emitter of the sandbox: notifications to the product's subscription URL.

A delivery row holds the exact bytes of the notification; it is created in the
caller's database transaction and handed to a small thread pool when that
transaction commits (so the partner never hears of a transaction it cannot read
yet). Every attempt is signed with the product's signing secret over the stored
bytes, recorded, and on failure (connection error or any non-2xx answer) retried
with exponential backoff and jitter until SANDBOX_WEBHOOK_MAX_ATTEMPTS. The pool
is the sandbox's own: it needs neither Celery nor the partner's workers.

A sender thread keeps its database connection from one attempt to the next, as a web
worker keeps its own between requests (CONN_MAX_AGE, checked before each attempt):
opening one per attempt cost the emulator about 1.3 ms of CPU and PostgreSQL a new
backend per notification (docs/performance.md, "What the emulated platform costs").
`senders_stop` ends the threads and closes their connections (tests: before the test
database is dropped).
"""

import json
import logging
import os
import queue
import threading
import time

import requests
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connections, transaction
from django.utils import timezone

from partner.core.retries import backoff
from partner.platform.formats import WEBHOOK_EVENT_CREATED
from partner.platform.signatures import signature_compute

from .faults import fault_for
from .models import FaultRule, Product, WebhookAttempt, WebhookDelivery

logger = logging.getLogger(__name__)

_local = threading.local()
_pool_lock = threading.Lock()
# This process's sender threads and their queue of attempts to make now: (delivery id, how many
# times in a row the emulator's database was away for it), or _STOP.
_pool: tuple[int, queue.SimpleQueue, list[threading.Thread]] | None = None
_STOP = None
_outstanding = 0
_outstanding_changed = threading.Condition()


def _attempts() -> queue.SimpleQueue:
    """The queue of this process's sender threads (SANDBOX_WEBHOOK_WORKERS of them, started with it)."""
    global _pool
    with _pool_lock:
        # A forked worker process (gunicorn) must not reuse its parent's threads.
        if _pool is None or _pool[0] != os.getpid():
            attempts, threads = queue.SimpleQueue(), []
            for number in range(settings.SANDBOX_WEBHOOK_WORKERS):
                thread = threading.Thread(target=_sender, args=(attempts,), name=f"sandbox-webhook-{number}")
                thread.daemon = True
                thread.start()
                threads.append(thread)
            _pool = (os.getpid(), attempts, threads)
        return _pool[1]


def _sender(attempts: queue.SimpleQueue) -> None:
    """One sender thread: the attempts one after another, on this thread's own database connection."""
    try:
        while (item := attempts.get()) is not _STOP:
            _attempt(*item)
    finally:
        connections.close_all()  # this thread's connections only


def senders_stop(timeout: float = 10.0) -> None:
    """End this process's sender threads once the attempts queued before are made, their database
    connections closed; the next delivery starts new ones. An attempt waiting for its backoff is
    made by those."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is None or pool[0] != os.getpid():
        return
    _, attempts, threads = pool
    for _thread in threads:
        attempts.put(_STOP)  # one each: a thread takes no item after its own
    for thread in threads:
        thread.join(timeout)


_sessions: list[requests.Session] = []
_sessions_lock = threading.Lock()


def _session() -> requests.Session:
    session = getattr(_local, "session", None)
    if session is None:
        session = requests.Session()
        session.trust_env = False  # no proxy or netrc from the environment
        _local.session = session
        with _sessions_lock:
            _sessions.append(session)
    return session


def sessions_close() -> None:
    """Close the sender threads' kept-alive connections (tests: each holds a server thread open)."""
    with _sessions_lock:
        for session in _sessions:
            session.close()


def subscription_url(product: Product, resource_type: str, event_type: str = WEBHOOK_EVENT_CREATED) -> str | None:
    """The URL of the product's subscription for this resource and event type (None: not subscribed)."""
    for item in product.data.get("webhooks") or []:
        if not isinstance(item, dict) or item.get("resource") != resource_type:
            continue
        events = item.get("events") or []
        if events and event_type not in events:
            continue
        if item.get("url"):
            return item["url"]
    return None


def notification_body(*, event_id: str, resource_type: str, resource_id: str, product_name: str, resource_ref: str):
    document = {
        "eventId": event_id,
        "eventTime": timezone.now().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "eventType": WEBHOOK_EVENT_CREATED,
        "meta": {
            "resourceType": resource_type,
            "resourceId": resource_id,
            "instanceId": product_name,
            "resourceRef": resource_ref,
        },
    }
    # Default separators (with spaces): a receiver that re-serialises before
    # verifying gets different bytes and a wrong signature, as with the real service.
    return json.dumps(document, ensure_ascii=False).encode()


def delivery_create(*, product: Product, resource_type: str, resource_id: str, resource_ref: str):
    """Record a notification and send it after the current transaction commits.

    Returns the delivery, or None when the product has no subscription for the resource type.
    """
    url = subscription_url(product, resource_type)
    if not url:
        logger.info("sandbox: product %s has no webhook for %s", product.name, resource_type)
        return None
    delivery = WebhookDelivery(product=product, url=url, resource_type=resource_type, resource_id=resource_id)
    delivery.body = notification_body(
        event_id=delivery.event_id,
        resource_type=resource_type,
        resource_id=resource_id,
        product_name=product.name,
        resource_ref=resource_ref,
    )
    fault = fault_for(FaultRule.Endpoint.WEBHOOK)
    if fault.drop:
        delivery.status = WebhookDelivery.Status.DROPPED
        delivery.save()
        return delivery
    delivery.save()
    transaction.on_commit(lambda: delivery_schedule(delivery_id=delivery.pk, delay=fault.latency))
    return delivery


def delivery_schedule(*, delivery_id: int, delay: float = 0.0) -> None:
    """Start sending a recorded delivery in the background, after `delay` seconds (a latency fault)."""
    global _outstanding
    with _outstanding_changed:
        _outstanding += 1
    _attempt_submit(delivery_id, delay=delay)


def _attempt_submit(delivery_id: int, *, delay: float = 0.0, away: int = 0) -> None:
    """Hand an attempt to the sender threads, now or after `delay` seconds (`away`: how many times
    in a row the emulator's own database was away for it)."""
    if delay <= 0:
        _attempts().put((delivery_id, away))
        return
    timer = threading.Timer(delay, lambda: _attempts().put((delivery_id, away)))
    timer.daemon = True
    timer.start()


def _finished() -> None:
    global _outstanding
    with _outstanding_changed:
        _outstanding -= 1
        _outstanding_changed.notify_all()


def _backoff(number: int) -> float:
    """The wait after attempt `number` (the project's one backoff, as the partner's own retries)."""
    return backoff(number - 1, base=settings.SANDBOX_WEBHOOK_BACKOFF, ceiling=settings.SANDBOX_WEBHOOK_BACKOFF_MAX)


def _attempt(delivery_id: int, away: int = 0) -> None:
    final = True
    try:
        close_old_connections()
        # What an attempt sends and signs with: neither the product's document nor the rest.
        delivery = (
            WebhookDelivery.objects.select_related("product")
            .only("url", "body", "attempt_count", "product", "product__signing_secret")
            .get(pk=delivery_id)
        )
        body = bytes(delivery.body)
        number = delivery.attempt_count + 1
        headers = {
            "Content-Type": "application/json",
            settings.SVC_SIGNATURE_HEADER: signature_compute(body, delivery.product.signing_secret),
        }
        started_at = timezone.now()
        clock = time.monotonic()
        status_code, error, excerpt = None, "", ""
        try:
            answer = _session().post(
                delivery.url,
                data=body,
                headers=headers,
                timeout=settings.SANDBOX_WEBHOOK_TIMEOUT,
                allow_redirects=False,
            )
            status_code, excerpt = answer.status_code, answer.text[:300]
        except requests.RequestException as exc:
            error = f"{type(exc).__name__}: {str(exc)[:400]}"
        duration_ms = int((time.monotonic() - clock) * 1000)
        delivered = status_code is not None and 200 <= status_code < 300
        final = delivered or number >= settings.SANDBOX_WEBHOOK_MAX_ATTEMPTS
        if delivered:
            status = WebhookDelivery.Status.DELIVERED
        else:
            status = WebhookDelivery.Status.FAILED if final else WebhookDelivery.Status.PENDING
        with transaction.atomic():  # one write transaction per attempt
            WebhookAttempt.objects.create(
                delivery=delivery,
                number=number,
                started_at=started_at,
                duration_ms=duration_ms,
                status_code=status_code,
                error=error,
                response_excerpt=excerpt,
            )
            WebhookDelivery.objects.filter(pk=delivery_id).update(
                attempt_count=number, last_status_code=status_code, status=status, updated_at=timezone.now()
            )
        if not final:
            _attempt_submit(delivery_id, delay=_backoff(number))
    except WebhookDelivery.DoesNotExist:
        final = True  # deleted meanwhile (a test database flushed between retries): nothing to send
    except (OperationalError, InterfaceError) as exc:
        # The emulator's own database away (restarted): the delivery is still recorded as pending
        # there, so it is tried again later, as a platform's queue would, for as many tries as a
        # failing endpoint gets. Never dropped for an outage of the emulator's: an order whose
        # callback it lost would wait for the reconciliation.
        final = away + 1 >= settings.SANDBOX_WEBHOOK_MAX_ATTEMPTS
        if final:
            logger.exception("sandbox: webhook delivery %s broke: the database stayed away", delivery_id)
        else:
            logger.warning("sandbox: webhook delivery %s waits for the database (%s)", delivery_id, type(exc).__name__)
            _attempt_submit(delivery_id, delay=_backoff(away + 1), away=away + 1)
    except Exception:
        final = True
        logger.exception("sandbox: webhook delivery %s broke", delivery_id)
    finally:
        if final:
            _finished()


def webhook_deliveries_wait(timeout: float = 10.0) -> bool:
    """Wait until every scheduled delivery reached its final state; False on timeout."""
    deadline = time.monotonic() + timeout
    with _outstanding_changed:
        while _outstanding > 0:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _outstanding_changed.wait(left)
    return True
