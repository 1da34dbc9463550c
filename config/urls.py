"""URL map: the partner API, the embedded UI, the admin, the operators' endpoints and (when enabled)
the sandbox. Every `/v1/` route of the partner API is declared here, in one place."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, reverse_lazy

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

urlpatterns = [
    path("v1/", include((api_v1, "v1"))),
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
