"""The operators' app: the operations dashboard, the health probes and the metrics endpoint."""

from django.apps import AppConfig


class OperationsConfig(AppConfig):
    name = "partner.operations"
    verbose_name = "Operations"
