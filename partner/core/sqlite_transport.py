"""The local SQLite broker's transport: kombu's SQLAlchemy transport, waiting in short steps.

A worker on a polling transport waits for messages in calls of two seconds, and only between
calls does it see that it was asked to stop; with kombu's one-second polls a warm shutdown began
up to four seconds after the signal, and `make run` (honcho gives its processes five) killed the
worker before it ended. Here each wait lasts at most WAIT_STEP and the queue is polled every
POLLING_INTERVAL, so a stop is seen at once; an idle worker pays a few cheap SELECTs a second on
a local file. Installed for `sqla+` URLs (the local broker, `partner.core.brokers`) by `config/celery.py`.
"""

from kombu.transport import sqlalchemy

POLLING_INTERVAL = 0.1  # seconds between polls of an empty queue
WAIT_STEP = 0.25  # longest wait for a message before the worker looks at its own state again


class Transport(sqlalchemy.Transport):
    polling_interval = POLLING_INTERVAL

    def drain_events(self, connection, timeout=None):
        """Wait at most WAIT_STEP (socket.timeout then, as for any wait that found nothing)."""
        step = WAIT_STEP if timeout is None else min(timeout, WAIT_STEP)
        return super().drain_events(connection, timeout=step)
