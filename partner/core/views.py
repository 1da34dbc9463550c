"""GET /healthz and GET /metrics.

/healthz: 200 when the database and the broker answer, 503 naming what is down. Warnings (what a
person should fix while the application serves) make the status "degraded", still 200: a load
balancer must not take every instance out for them.
/metrics: the Prometheus figures (partner/core/metrics.py), to those it is open to.
"""

from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from partner.core.health import health_report, health_warnings
from partner.core.metrics import CONTENT_TYPE_LATEST, metrics_access, metrics_text


@never_cache
@require_GET
def healthz(request):
    report = health_report()
    down = [name for name, state in report.items() if state != "ok"]
    warnings = [] if down else health_warnings()
    body = {"status": "down" if down else "degraded" if warnings else "ok", **report}
    if down:
        body["down"] = down
    if warnings:
        body["warnings"] = warnings
    return JsonResponse(body, status=503 if down else 200)


@never_cache
@require_safe
def metrics(request):
    refused = metrics_access(request)
    if refused is not None:
        response = HttpResponse("Metrics are not open to this client.\n", status=refused, content_type="text/plain")
        if refused == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)
