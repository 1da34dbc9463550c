from django.apps import AppConfig


class FulfillmentConfig(AppConfig):
    name = "partner.fulfillment"
    verbose_name = "Fulfillment"
