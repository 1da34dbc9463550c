"""The connector: a partner's own order system, told of its orders by signed events and answering
them through the API."""

from django.apps import AppConfig


class ConnectorConfig(AppConfig):
    name = "partner.connector"
    verbose_name = "Connector"

    def ready(self):
        from django.conf import settings

        from partner.connector.events import order_announced_receive
        from partner.connector.sending import events_left_hand_back, relay_chore
        from partner.core.housekeeping import housekeeping_chore_register
        from partner.core.leases import lease_hand_back_register
        from partner.fulfillment.orders.announcements import order_announced

        # The fulfillment announces an order's moments inside the transaction that makes them; the
        # connector stores an event in that transaction (a layer below never imports this one).
        order_announced.connect(order_announced_receive, dispatch_uid="connector-events")
        lease_hand_back_register("events", events_left_hand_back)

        from partner.connector import retention
        from partner.core.retention import purges_register

        purges_register(retention.PURGES)

        from django.core.checks import register

        from partner.connector import checks
        from partner.core.checks import START

        # The preflight's checks of the stored connections (check --deploy, and the servers' start).
        register(checks.demo_connection_check, START, deploy=True)
        register(checks.connection_endpoints_check, START, deploy=True)

        from partner.connector.selectors import connection_health_warnings
        from partner.core.health import health_warning_register

        health_warning_register(connection_health_warnings, ready_only=True)
        if settings.CONNECTOR_RELAY_INTERVAL > 0:
            housekeeping_chore_register(relay_chore(interval=settings.CONNECTOR_RELAY_INTERVAL))
