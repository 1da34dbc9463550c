"""The shared base: models, errors, the API error handler, logging, health, leases and enqueueing."""

import os
from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class CoreConfig(AppConfig):
    name = "partner.core"
    verbose_name = "Core"

    def ready(self):
        metrics_folder_prepare()
        from . import checks  # noqa: F401 - registers the production preflight (check --deploy)
        from .metrics import broker_waiting_collect, metrics_collector_register

        metrics_collector_register("broker", broker_waiting_collect)


def metrics_folder_prepare() -> None:
    """Make the folder where every process of this host counts its metrics, and name it to the
    Prometheus client library (its multiprocess mode), which reads it from the environment once,
    when it is first imported. So this runs when the process starts, before any app's ready():
    partner.core is first in INSTALLED_APPS, and the admin's autodiscovery imports the modules that
    count. The processes a process starts (a worker's children, a test's workers) inherit it."""
    folder = Path(settings.PROMETHEUS_MULTIPROC_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(folder)
