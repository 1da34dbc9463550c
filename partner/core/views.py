"""GET /healthz: 200 when the database and the broker answer, 503 naming what is down.

Warnings (what a person should fix while the application serves) make the status "degraded",
still 200: a load balancer must not take every instance out for them.
"""

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from partner.core.health import health_report, health_warnings


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
