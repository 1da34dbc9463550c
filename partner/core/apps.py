from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "partner.core"
    verbose_name = "Core"
