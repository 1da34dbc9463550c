"""GET /v1/status/{transaction_id}."""

from django.urls import path

from partner.fulfillment.orders.views import OrderStatusApi

app_name = "fulfillment"
urlpatterns = [
    path("status/<str:transaction_id>", OrderStatusApi.as_view(), name="status"),
]
