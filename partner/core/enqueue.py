"""The one way a task is handed to the broker: by its name, after the transaction that needs it commits.

Each app enqueues its own tasks through one function per task, in its `enqueue.py`
(`order_run_enqueue`, ...), and each of those calls `enqueue_after_commit` with the
task's name. Publishing by name keeps the services free of the task modules (which import the
services), so no app has an import cycle. The row the task works on is committed before any
worker can look for it, and a broker that refuses the message costs nothing but time: the row
is safe in the database and the app's periodic sweep sends it again (`partner.core.leases`).

The inbox's notifications go out through its outbox relay instead (`partner.inbox.outbox`):
the webhook request must not wait for the broker at all.
"""

import logging

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)


def task_send(name: str, /, *, countdown: float | None = None, **kwargs) -> bool:
    """Publish task `name` with keyword arguments now (to run after `countdown` seconds when given);
    False (logged) when the broker refused it."""
    try:
        current_app.send_task(name, kwargs=kwargs, countdown=countdown)
    except Exception as exc:  # kombu and its transports raise several types; the sweep sends it later
        logger.warning("broker unavailable: %s %s left for the sweep (%s)", name, kwargs, type(exc).__name__)
        return False
    return True


def enqueue_after_commit(name: str, /, *, countdown: float | None = None, **kwargs) -> None:
    """Publish task `name` once the current transaction commits (at once outside a transaction)."""
    transaction.on_commit(lambda: task_send(name, countdown=countdown, **kwargs))
