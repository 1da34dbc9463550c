"""Addresses of the embedded UI; mounted at the root, so the API paths are written out in full."""

from django.urls import path

from partner.ui import views

app_name = "ui"
urlpatterns = [
    path("", views.embed_page, name="embed"),
    path("v1/origins/<str:origin_id>", views.origin_proxy, name="origin-proxy"),
    path("ui/transactions/<str:transaction_id>", views.transaction_progress, name="transaction-progress"),
    path(
        "ui/transactions/<str:transaction_id>/documents/<str:document_id>",
        views.transaction_document,
        name="transaction-document",
    ),
    path("ui/orders/check", views.order_check, name="order-check"),
]
