"""Health for load balancers and orchestrators, and the Prometheus metrics.

- /healthz/live: the process answers (no database, no broker): restart it when this fails.
- /healthz/ready: the database and the broker answer: 503 naming what is down, so a load balancer
  sends this instance nothing; what a person should fix while it serves (a product secret no key
  decrypts, the inbox relay silent, a backlog past its threshold) makes it "degraded", still 200:
  a load balancer must not take every instance out for them.
- /healthz: as it always was (database, broker and the general warnings), for compatibility.
- /metrics: the Prometheus figures (partner/core/metrics.py), to those it is open to.

Field encryption keys that cannot decrypt (every webhook would answer 500) are down too: 503. What
is down and the warnings (which name products and the state of their secrets) are details: shown to
those /metrics is open to (METRICS_PUBLIC in local runs, the metrics token, METRICS_ALLOWED_NETWORKS)
and to signed-in staff; anyone else gets the status alone (`{"status": "ok"}`, with the same HTTP
status). The API schema (/api/schema/) is behind the same rule.

All answer GET and HEAD (load balancers probe with either, and run the same checks for both); the
probes are never cached.
"""

from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from drf_spectacular.views import SpectacularAPIView

from partner.core.health import health_failures, health_report, health_warnings
from partner.core.metrics import CONTENT_TYPE_LATEST, metrics_access, metrics_text


def details_allowed(request) -> bool:
    """Whether a request may read the operators' details (what is down, warnings, the API schema):
    whoever may read /metrics, and signed-in staff."""
    if metrics_access(request) is None:
        return True
    user = getattr(request, "user", None)  # no session on a bare WSGI call
    return bool(user is not None and user.is_active and user.is_staff)


def _health(request, *, ready: bool) -> JsonResponse:
    report = health_report()
    down = [name for name, state in report.items() if state != "ok"] + health_failures()
    warnings = [] if down else health_warnings(ready=ready)
    status = "down" if down else "degraded" if warnings else "ok"
    code = 503 if down else 200
    if not details_allowed(request):
        return JsonResponse({"status": status}, status=code)
    body = {"status": status, **report}
    if down:
        body["down"] = down
    if warnings:
        body["warnings"] = warnings
    return JsonResponse(body, status=code)


@never_cache
@require_safe
def healthz(request):
    return _health(request, ready=False)


@never_cache
@require_safe
def healthz_ready(request):
    return _health(request, ready=True)


def _refused(status: int, what: str) -> HttpResponse:
    response = HttpResponse(f"{what} are not open to this client.\n", status=status, content_type="text/plain")
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


_schema = SpectacularAPIView.as_view()


@require_safe
def api_schema(request, *args, **kwargs):
    """/api/schema/: the API's OpenAPI document, to those the operators' details are open to."""
    if not details_allowed(request):
        return _refused(metrics_access(request) or 403, "The API schema and its details")
    return _schema(request, *args, **kwargs)


@never_cache
@require_safe
def healthz_live(request):
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def metrics(request):
    refused = metrics_access(request)
    if refused is not None:
        return _refused(refused, "Metrics")
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)
