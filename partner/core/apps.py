"""The shared base: models, errors, the API error handler, logging, health, leases and enqueueing."""

import os
from pathlib import Path

from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class CoreConfig(AppConfig):
    name = "partner.core"
    verbose_name = "Core"

    def ready(self):
        environment_malformed_refuse()
        metrics_folder_prepare()
        from . import checks  # noqa: F401 - registers the production preflight (check --deploy)
        from .metrics import broker_waiting_collect, metrics_collector_register
        from .permission_cache import receivers_connect

        metrics_collector_register("broker", broker_waiting_collect)
        receivers_connect()  # a change to who holds which permission renews the kept permissions


def environment_malformed_refuse() -> None:
    """No process starts (web, worker, scheduler, manage.py) with a variable whose value cannot be
    used: one error names every one of them (the settings noted each and read on,
    ENVIRONMENT_MALFORMED), never a value."""
    malformed = settings.ENVIRONMENT_MALFORMED
    if malformed:
        lines = "".join(f"\n- {name} {why}" for name, why in sorted(malformed.items()))
        raise ImproperlyConfigured(f"{len(malformed)} environment variable(s) cannot be used:{lines}")


def metrics_folder_prepare() -> None:
    """Make the folder where every process of this host counts its metrics, and name it to the
    Prometheus client library (its multiprocess mode), which reads it from the environment once,
    when it is first imported. So this runs when the process starts, before any app's ready():
    partner.core is first in INSTALLED_APPS, and the admin's autodiscovery imports the modules that
    count. The processes a process starts (a worker's children, a test's workers) inherit it."""
    folder = Path(settings.PROMETHEUS_MULTIPROC_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
