"""URL map: the partner API, the embedded UI, the admin, the operators' endpoints and (when enabled)
the sandbox. Every `/v1/` route of the partner API is declared here, in one place."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path, reverse_lazy

from partner.connector.views import (
    EventListApi,
    OrderAcknowledgeApi,
    OrderDeclineApi,
    OrderDeliverApi,
    OrderDetailApi,
    OrderDocumentUploadApi,
    OrderListApi,
    OrderStatusUpdateApi,
    ProductDetailApi,
    ProductListApi,
    RouteUnknownApi,
    revoke_view,
    token_view,
)
from partner.core.ratelimits import admin_login_limited
from partner.core.views import favicon
from partner.fulfillment.orders.views import OrderStatusApi
from partner.inbox.views import webhook_receive_view
from partner.operations.views import api_schema, healthz, healthz_live, healthz_ready, metrics
from partner.ui.views import origin_proxy

# The partner API (DESIGN.md's contract): the service's webhooks in, an order's status, the origin
# proxy of the embedded UI.
api_v1 = [
    path("webhooks", webhook_receive_view, name="webhook-receive"),
    path("status/<str:transaction_id>", OrderStatusApi.as_view(), name="order-status"),
    path("origins/<str:origin_id>", origin_proxy, name="origin-proxy"),
]

# The connector's API (docs/connecting.md): a partner's own order system reads its orders and
# events and answers its orders; OAuth 2.0 client credentials at /api/v1/oauth/token (revoked at
# /api/v1/oauth/revoke).
connector_v1 = [
    path("oauth/token", token_view, name="token"),
    path("oauth/revoke", revoke_view, name="revoke"),  # RFC 7009
    path("orders", OrderListApi.as_view(), name="orders"),
    path("orders/<str:order_id>", OrderDetailApi.as_view(), name="order"),
    path("orders/<str:order_id>/acknowledge", OrderAcknowledgeApi.as_view(), name="order-acknowledge"),
    path("orders/<str:order_id>/status-updates", OrderStatusUpdateApi.as_view(), name="order-status-update"),
    path("orders/<str:order_id>/documents", OrderDocumentUploadApi.as_view(), name="order-documents"),
    path("orders/<str:order_id>/deliveries", OrderDeliverApi.as_view(), name="order-deliver"),
    path("orders/<str:order_id>/decline", OrderDeclineApi.as_view(), name="order-decline"),
    path("events", EventListApi.as_view(), name="events"),
    path("products", ProductListApi.as_view(), name="products"),
    path("products/<str:name>", ProductDetailApi.as_view(), name="product"),
    # Last: every other path under /api/v1/ is an unknown route of this API (404 in its shape).
    re_path(r"^.*$", RouteUnknownApi.as_view(), name="route-unknown"),
]

urlpatterns = [
    path("v1/", include((api_v1, "v1"))),
    path("api/v1/", include((connector_v1, "connector"))),
    path("healthz", healthz, name="healthz"),
    path("healthz/live", healthz_live, name="healthz-live"),
    path("healthz/ready", healthz_ready, name="healthz-ready"),
    path("metrics", metrics, name="metrics"),
    path("favicon.ico", favicon, name="favicon"),
    # Before admin.site.urls, so the admin's sign-in is answered through its rate limits.
    path("admin/login/", admin_login_limited(admin.site.login)),
    path("admin/", admin.site.urls),
    # Behind the same rule as /metrics (partner/operations/views.py).
    path("api/schema/", api_schema, name="api-schema"),
    path("", include("partner.ui.urls")),
]

# The admin's "View site": `/` is our panel, which works only inside the host. With the sandbox
# mounted (local runs) the sandbox's host page shows it there; without it there is no page to open.
admin.site.site_url = None
# The admin speaks as the partner, not as "Django administration".
admin.site.site_header = settings.PARTNER_NAME
admin.site.site_title = settings.PARTNER_NAME
admin.site.index_title = "Orders, products and operations"
if settings.SANDBOX_ENABLED:
    urlpatterns.append(path("sandbox/", include("partner.sandbox.urls")))
    admin.site.site_url = reverse_lazy("sandbox:host-page")

# An exception no view caught: Django's 500, or 503 when one of our own services is away for a moment.
handler500 = "partner.core.views.server_error"
