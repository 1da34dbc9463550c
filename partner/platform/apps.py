"""The service's client as an app: what it connects once Django is set up."""

from django.apps import AppConfig


class PlatformConfig(AppConfig):
    name = "partner.platform"
    verbose_name = "Platform client"

    def ready(self):
        from partner.platform.metrics import receivers_connect

        receivers_connect()
