"""The sandbox's host application page: plays the loan application that frames our UI.

For local runs, demos and the browser tests. The page lets a person pick a
lender user, a loan and a product, frames the partner UI and answers the guest
library's messages the way the host would (see
../shared/notes/host-js-api-protocol.md), using the sandbox's host-side JSON
API for origins and transactions. It also shows a document the UI asks the host
to open, read from the sandbox's stored uploads.
"""

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_safe

from partner.sandbox.models import UploadSlot

# The host page runs our own scripts only and frames the partner UI (same origin here).
HOST_PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@never_cache
@require_safe
def host_page(request):
    """GET (and HEAD) /sandbox/host/: the host application with the partner UI in its side panel."""
    host_path = request.path  # /sandbox/host/ wherever the sandbox is mounted
    sandbox_root = host_path[: -len("host/")] if host_path.endswith("host/") else "/sandbox/"
    context = {
        # The UI is framed from this server, at the interface address of the product.
        "ui_url": request.build_absolute_uri(reverse("ui:embed")),
        "host_api_url": sandbox_root + "host-api/",
        "resource_url": host_path + "resources/RESOURCE_ID",
    }
    response = render(request, "sandbox/host.html", context)
    response["Content-Security-Policy"] = HOST_PAGE_CSP
    return response


@never_cache
@require_GET
def host_resource(request, resource_id):
    """GET /sandbox/host/resources/{id}: an uploaded attachment, as the host's document viewer shows it."""
    slot = UploadSlot.objects.filter(pk=resource_id, uploaded_at__isnull=False).first()
    if slot is None or slot.content is None:
        raise Http404("No uploaded document with this id.")
    response = HttpResponse(bytes(slot.content), content_type=slot.mime_type or "application/octet-stream")
    safe_name = "".join(ch for ch in slot.name if ch.isalnum() or ch in "._- ") or "document"
    response["Content-Disposition"] = f'inline; filename="{safe_name}"'
    # Uploaded bytes are untrusted: no scripts, no sniffing.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'; object-src 'self'"
    return response
