"""Health of what the application needs: the database and the broker.

Apps add warnings (what a person should fix while the application keeps serving, such as
a product secret no key decrypts) with `health_warning_register`; `ready_only` ones (the inbox
relay's last round, a backlog past its threshold) are reported by /healthz/ready only, so that
/healthz answers as it always did.

The broker is the one of Celery's current app (the project's, set up by `config/celery.py`),
so this module, at the bottom of the layers, imports nothing of the project above it.
"""

from collections.abc import Callable

from celery import current_app
from django.db import connection

from partner.core.encryption import keys_usable

# Checks the apps add (at start-up, in their AppConfig.ready): each returns what a person should
# fix, without taking the instance out of service.
_warning_checks: list[Callable[[], list[str]]] = []
_ready_checks: list[Callable[[], list[str]]] = []
# What makes every request of a kind fail (field encryption keys that cannot decrypt: every webhook
# answers 500): reported as down, so that /healthz and /healthz/ready answer 503.
_failure_checks: list[Callable[[], list[str]]] = [lambda: [] if keys_usable() else ["encryption keys"]]


def health_warning_register(check: Callable[[], list[str]], *, ready_only: bool = False) -> None:
    checks = _ready_checks if ready_only else _warning_checks
    if check not in checks:
        checks.append(check)


def health_warnings(*, ready: bool = False) -> list[str]:
    """What needs a person's attention although the application serves (a warning check that fails is one);
    with `ready`, the readiness checks too."""
    warnings = []
    for check in [*_warning_checks, *(_ready_checks if ready else [])]:
        try:
            warnings += check()
        except Exception as exc:  # the database being down is reported by health_report
            warnings.append(f"{check.__name__} could not run ({type(exc).__name__})")
    return warnings


def health_failures() -> list[str]:
    """What is broken for every request although the database and the broker answer."""
    return [name for check in _failure_checks for name in check()]


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
            # The local SQLite broker (kombu's SQLAlchemy transport) "connects" without touching its
            # file: declare the default queue, which reads the queue's row, so a file that cannot be
            # opened or has lost kombu's tables shows as down (a read: it never waits for a writer).
            # Declared as Celery declares it (durable, not auto-deleted): RabbitMQ refuses a
            # declaration that differs from the existing queue's.
            with conn.channel() as channel:
                channel.queue_declare(
                    current_app.conf.task_default_queue, passive=False, durable=True, auto_delete=False
                )
    except Exception:
        return False
    return True


def health_report() -> dict:
    return {"database": "ok" if database_check() else "down", "broker": "ok" if broker_check() else "down"}
