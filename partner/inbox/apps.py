"""The webhook inbox: every notification the service sent, stored, relayed and dispatched."""

from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "partner.inbox"
    verbose_name = "Inbox"
