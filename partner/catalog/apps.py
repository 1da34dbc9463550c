"""Products, credential definitions and partner accounts, kept in step with the service."""

from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "partner.catalog"
    verbose_name = "Catalog"

    def ready(self):
        from . import checks  # noqa: F401 - registers the system checks
