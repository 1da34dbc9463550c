"""The webhook inbox: every notification the service sent, stored, relayed and dispatched."""

from django.apps import AppConfig


class InboxConfig(AppConfig):
    name = "partner.inbox"
    verbose_name = "Inbox"

    def ready(self):
        from partner.core.leases import lease_hand_back_register
        from partner.inbox.outbox import notifications_left_hand_back

        lease_hand_back_register("notifications", notifications_left_hand_back)

        from partner.core.retention import purges_register
        from partner.inbox import retention

        purges_register(retention.PURGES)

        from partner.core.metrics import metrics_collector_register
        from partner.inbox.metrics import inbox_collect

        metrics_collector_register("inbox", inbox_collect)

        from partner.core.health import health_warning_register
        from partner.inbox.health import backlog_warnings, relay_warnings

        health_warning_register(relay_warnings, ready_only=True)
        health_warning_register(backlog_warnings, ready_only=True)

        from django.conf import settings

        from partner.core.housekeeping import housekeeping_chore_register
        from partner.inbox.relay import relay_chore

        if settings.INBOX_RELAY_INTERVAL > 0:  # 0: the relay runs as a process of its own
            housekeeping_chore_register(relay_chore(interval=settings.INBOX_RELAY_INTERVAL))
