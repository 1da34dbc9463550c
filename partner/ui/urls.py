"""Addresses of the embedded UI, mounted at the root (its `/v1/origins/{id}` is declared with the
partner API's routes, in config/urls.py)."""

from django.urls import path

from partner.ui import views

app_name = "ui"
urlpatterns = [
    path("", views.embed_page, name="embed"),
    path("ui/transactions/<str:transaction_id>", views.transaction_progress, name="transaction-progress"),
    path(
        "ui/transactions/<str:transaction_id>/documents/<str:document_id>",
        views.transaction_document,
        name="transaction-document",
    ),
    path("ui/orders/check", views.order_check, name="order-check"),
]
