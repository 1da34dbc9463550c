"""POST /v1/webhooks."""

from django.urls import path

from partner.inbox.views import webhook_receive_view

app_name = "inbox"
urlpatterns = [
    path("webhooks", webhook_receive_view, name="webhook-receive"),
]
