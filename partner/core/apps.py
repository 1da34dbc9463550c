"""The shared base: models, errors, the API error handler, logging, health, leases and enqueueing."""

from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "partner.core"
    verbose_name = "Core"
