"""The project's own answers outside any app: /favicon.ico, and the page of an error no view caught."""

import sys

from django.http import HttpResponse, HttpResponsePermanentRedirect
from django.template import loader
from django.templatetags.static import static
from django.views import defaults
from django.views.decorators.http import require_safe

from partner.core.cache import CACHE_UNREACHABLE
from partner.core.errors import Unavailable
from partner.core.retries import outage_of

# A day: the static address does not change, but a browser should see a new icon within one.
FAVICON_REDIRECT_MAX_AGE = 24 * 60 * 60


@require_safe
def favicon(request):
    """GET /favicon.ico: to the static icon (WhiteNoise serves it), for browsers that ask here by default.

    static/favicon.ico is static/favicon.svg's mark drawn at 16, 32 and 48 pixels; the pages link the SVG.
    """
    response = HttpResponsePermanentRedirect(static("favicon.ico"))
    response["Cache-Control"] = f"public, max-age={FAVICON_REDIRECT_MAX_AGE}"
    return response


def server_error(request):
    """handler500: the page of an exception no view caught. One of our own services away for a
    moment (the database restarting, the cache: `outage_of`) is no bug: 503 with Retry-After and a
    page that says so, as the API's 503 does (`partner.core.api.error_answer`). A staff member who
    sent a form in that moment is told to look before sending it again: the action may have been
    saved before the outage met the answer. Anything else is Django's 500. The page reads nothing
    (no database, no session, no user): it must draw while they are away."""
    exc = sys.exc_info()[1]
    if exc is None or not (isinstance(exc, CACHE_UNREACHABLE) or outage_of(exc) is not None):
        return defaults.server_error(request)
    page = loader.get_template("outage.html").render({"retry_after": Unavailable.retry_after})
    return HttpResponse(page, status=503, headers={"Retry-After": str(Unavailable.retry_after)})
