"""/favicon.ico: where browsers ask for the icon by default, sent on to the static file."""

from django.http import HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_safe

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
