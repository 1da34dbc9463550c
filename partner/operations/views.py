"""Health for load balancers and orchestrators, and the Prometheus metrics.

- /healthz/live: the process answers (no database, no broker): restart it when this fails.
- /healthz/ready: the database and the broker answer: 503 naming what is down, so a load balancer
  sends this instance nothing; what a person should fix while it serves (a product secret no key
  decrypts, the inbox relay silent, a backlog past its threshold) makes it "degraded", still 200:
  a load balancer must not take every instance out for them.
- /healthz: as it always was (database, broker and the general warnings), for compatibility.
- /metrics: the Prometheus figures (partner/core/metrics.py), to those it is open to.

All answer GET and HEAD (load balancers probe with either, and run the same checks for both); the
probes are never cached.
"""

from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from partner.core.health import health_report, health_warnings
from partner.core.metrics import CONTENT_TYPE_LATEST, metrics_access, metrics_text


def _health(*, ready: bool) -> JsonResponse:
    report = health_report()
    down = [name for name, state in report.items() if state != "ok"]
    warnings = [] if down else health_warnings(ready=ready)
    body = {"status": "down" if down else "degraded" if warnings else "ok", **report}
    if down:
        body["down"] = down
    if warnings:
        body["warnings"] = warnings
    return JsonResponse(body, status=503 if down else 200)


@never_cache
@require_safe
def healthz(request):
    return _health(ready=False)


@never_cache
@require_safe
def healthz_ready(request):
    return _health(ready=True)


@never_cache
@require_safe
def healthz_live(request):
    return JsonResponse({"status": "ok"})


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
