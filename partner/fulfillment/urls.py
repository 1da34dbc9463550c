"""GET /v1/status/{transaction_id}."""

from django.urls import path

from partner.fulfillment.views import TrackerStatusApi

app_name = "fulfillment"
urlpatterns = [
    path("status/<str:transaction_id>", TrackerStatusApi.as_view(), name="status"),
]
