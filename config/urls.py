"""URL map: the partner API, the embedded UI, the admin and (when enabled) the sandbox."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, reverse_lazy
from drf_spectacular.views import SpectacularAPIView

from partner.core.ratelimits import admin_login_limited
from partner.core.views import favicon, healthz, healthz_live, healthz_ready, metrics

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("healthz/live", healthz_live, name="healthz-live"),
    path("healthz/ready", healthz_ready, name="healthz-ready"),
    path("metrics", metrics, name="metrics"),
    path("favicon.ico", favicon, name="favicon"),
    # Before admin.site.urls, so the admin's sign-in is answered through its rate limits.
    path("admin/login/", admin_login_limited(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/", include("partner.inbox.urls")),
    path("v1/", include("partner.fulfillment.urls")),
    path("", include("partner.ui.urls")),
]

# The admin's "View site": `/` is our panel, which works only inside the host. With the sandbox
# mounted (local runs) the sandbox's host page shows it there; without it there is no page to open.
admin.site.site_url = None
if settings.SANDBOX_ENABLED:
    urlpatterns.append(path("sandbox/", include("partner.sandbox.urls")))
    admin.site.site_url = reverse_lazy("sandbox:host-page")
