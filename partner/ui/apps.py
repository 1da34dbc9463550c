from django.apps import AppConfig


class UIConfig(AppConfig):
    name = "partner.ui"
    verbose_name = "UI"
