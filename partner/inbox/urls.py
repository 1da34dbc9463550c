"""POST /v1/webhooks."""

from django.db import transaction
from django.urls import path

from partner.inbox.views import WebhookReceiveApi

app_name = "inbox"
urlpatterns = [
    # Never inside a request-wide transaction: a stored notification must survive any later error.
    path("webhooks", transaction.non_atomic_requests(WebhookReceiveApi.as_view()), name="webhook-receive"),
]
