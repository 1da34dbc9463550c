"""Health of what the application needs: the database and the broker.

The broker is the one of Celery's current app (the project's, set up by `config/celery.py`),
so this module, at the bottom of the layers, imports nothing of the project above it.
"""

from celery import current_app
from django.db import connection


def database_check() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception:
        return False
    return True


def broker_check(timeout: float = 2.0) -> bool:
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=timeout)
            # The filesystem transport "connects" without touching anything:
            # ask for the default queue so a missing folder shows as down.
            with conn.channel() as channel:
                channel.queue_declare(current_app.conf.task_default_queue, passive=False)
    except Exception:
        return False
    return True


def health_report() -> dict:
    return {"database": "ok" if database_check() else "down", "broker": "ok" if broker_check() else "down"}
