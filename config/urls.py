"""URL map: the partner API, the embedded UI, the admin and (when enabled) the sandbox."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from partner.core.ratelimits import admin_login_limited
from partner.core.views import healthz, healthz_live, healthz_ready, metrics

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("healthz/live", healthz_live, name="healthz-live"),
    path("healthz/ready", healthz_ready, name="healthz-ready"),
    path("metrics", metrics, name="metrics"),
    # Before admin.site.urls, so the admin's sign-in is answered through its rate limits.
    path("admin/login/", admin_login_limited(admin.site.login)),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("v1/", include("partner.inbox.urls")),
    path("v1/", include("partner.fulfillment.urls")),
    path("", include("partner.ui.urls")),
]

if settings.SANDBOX_ENABLED:
    urlpatterns.append(path("sandbox/", include("partner.sandbox.urls")))
