"""URLs of the sandbox, mounted at /sandbox/: the service's endpoints, uploads, the host API and page."""

from django.urls import include, path

from . import api, host_api

app_name = "sandbox"
urlpatterns = [
    path("oauth2/v1/token", api.token, name="token"),
    path("partner/v2/origins/<str:origin_id>", api.origin, name="origin"),
    path("partner/v2/transactions", api.transactions, name="transactions"),
    path("partner/v2/transactions/<str:transaction_id>", api.transaction, name="transaction"),
    path("partner/v2/transactions/<str:transaction_id>/response", api.response, name="response"),
    path("partner/v2/transactions/<str:transaction_id>/response/resources", api.resources, name="resources"),
    path("partner/v2/transactions/<str:transaction_id>/events/<str:event_id>", api.event, name="event"),
    path("partner/v2/products", api.products, name="products"),
    path("partner/v2/products/<str:product_id>", api.product, name="product"),
    path("uploads/<str:slot_id>", api.upload, name="upload"),
    path("host-api/context", host_api.context, name="host-context"),
    path("host-api/origins", host_api.origins, name="host-origins"),
    path("host-api/origins/<str:origin_id>/refresh", host_api.origin_refresh, name="host-origin-refresh"),
    path("host-api/origins/<str:origin_id>/expire", host_api.origin_expire, name="host-origin-expire"),
    path("host-api/transactions", host_api.transactions, name="host-transactions"),
    path("host/", include("partner.sandbox.host_urls")),
]
