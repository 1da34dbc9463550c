"""Products, credential definitions and partner accounts, kept in step with the service."""

from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "partner.catalog"
    verbose_name = "Catalog"

    def ready(self):
        from partner.core.health import health_warning_register

        from . import checks  # noqa: F401 - registers the system checks
        from .product_cache import receivers_connect
        from .selectors import secrets_health_warnings

        health_warning_register(secrets_health_warnings)
        receivers_connect()  # a change to a product or its definitions drops the orders' cached catalog
