"""The embedded UI the host frames: the new order form and an order's progress."""

from django.apps import AppConfig


class UIConfig(AppConfig):
    name = "partner.ui"
    verbose_name = "UI"
