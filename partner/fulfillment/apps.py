"""Orders, the pipeline that fulfills each transaction, and the fulfillers that do the work."""

from django.apps import AppConfig


class FulfillmentConfig(AppConfig):
    name = "partner.fulfillment"
    verbose_name = "Fulfillment"

    def ready(self):
        # The catalog (a lower layer) validates each product's fulfiller key and picks the default
        # of a newly pulled product: it learns the registered fulfillers here, never by importing up.
        from partner.catalog.fulfiller_keys import fulfillers_install
        from partner.fulfillment.automated.fulfillers import FULFILLERS, fulfillers_register
        from partner.fulfillment.automated.fulfillers.address_verification import AddressVerificationFulfiller
        from partner.fulfillment.automated.fulfillers.disclosure_status import DisclosureStatusFulfiller
        from partner.fulfillment.staff.fulfillers import ConnectedFulfiller, StaffWorkedFulfiller

        # The first is the partner's main product (a new product's default when no rule claims it).
        fulfillers_register(
            AddressVerificationFulfiller, DisclosureStatusFulfiller, StaffWorkedFulfiller, ConnectedFulfiller
        )
        fulfillers_install(FULFILLERS)

        from partner.core.retention import purges_register, transactions_open_register
        from partner.fulfillment.recovery import retention

        transactions_open_register(retention.transactions_with_open_order)
        purges_register(retention.PURGES)

        from partner.core.health import health_warning_register
        from partner.fulfillment.orders.selectors import confirmation_health_warnings

        health_warning_register(confirmation_health_warnings)

        from partner.core.leases import lease_hand_back_register
        from partner.fulfillment.recovery.sweeps import orders_left_hand_back

        lease_hand_back_register("orders", orders_left_hand_back)

        # The staff hear of a new order once its acknowledgement went out: the sender announces it
        # (`orders/announcements.py`), and the staff's package, above the sender, receives it.
        from partner.fulfillment.orders.announcements import order_announced
        from partner.fulfillment.staff.notices import order_acknowledged_receive

        order_announced.connect(order_acknowledged_receive, dispatch_uid="staff-new-order-notice")

        from partner.core.metrics import metrics_collector_register
        from partner.fulfillment.orders.metrics import orders_collect

        metrics_collector_register("orders", orders_collect)
