"""GET /healthz: 200 when the database and the broker answer, 503 naming what is down."""

from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from partner.core.health import health_report


@never_cache
@require_GET
def healthz(request):
    report = health_report()
    down = [name for name, state in report.items() if state != "ok"]
    body = {"status": "down" if down else "ok", **report}
    if down:
        body["down"] = down
    return JsonResponse(body, status=503 if down else 200)
