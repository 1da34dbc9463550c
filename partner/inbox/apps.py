from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "partner.inbox"
    verbose_name = "Inbox"
