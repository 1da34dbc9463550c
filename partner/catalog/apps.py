from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "partner.catalog"
    verbose_name = "Catalog"
