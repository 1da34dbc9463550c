"""The shared base: models, errors, the API error handler, logging, health, leases and enqueueing."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "partner.core"
    verbose_name = "Core"

    def ready(self):
        from . import checks  # noqa: F401 - registers the production preflight (check --deploy)
        from .metrics import broker_waiting_collect, metrics_collector_register

        metrics_collector_register("broker", broker_waiting_collect)
