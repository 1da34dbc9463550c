"""HTTP face of the sandbox: the token endpoint, the ten endpoints of the spec and the upload.

Plain Django views (the sandbox must stay cheap under benchmark load): each one
runs the fault rules of its endpoint, checks the bearer token with one indexed
query, reads its input, calls one service or selector and answers JSON. Every
refusal is a JSON body `{"error", "message", "problems"}` with a 4xx status.
"""

import base64
import binascii
import json
import re
import time
from functools import wraps
from urllib.parse import unquote

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from partner.core.errors import ApplicationError

from . import selectors
from .faults import fault_for
from .models import FaultRule
from .products import product_merge, product_replace
from .tokens import token_issue
from .transactions import response_patch
from .uploads import upload_accept, upload_slots_request

MAX_LIMIT = 50
DEFAULT_LIMIT = 25
_INTEGER = re.compile(r"^[0-9]{1,9}$")
E = FaultRule.Endpoint


def error_response(status: int, code: str, message: str, problems=None, headers=None) -> JsonResponse:
    response = JsonResponse({"error": code, "message": message, "problems": problems or []}, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def json_response(document, status: int = 200, headers=None) -> HttpResponse:
    response = HttpResponse(json.dumps(document), status=status, content_type="application/json")
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _bearer(request) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def endpoint(key: str, methods: tuple[str, ...], *, bearer: bool = True):
    """Fault rules, method check, bearer check and the error format around one sandbox view."""

    def decorate(view):
        @csrf_exempt
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            fault = fault_for(key)
            if fault.latency:
                time.sleep(fault.latency)
            if fault.status:
                return error_response(
                    fault.status,
                    "rate_limited" if fault.status == 429 else "unavailable",
                    "injected fault: try again later",
                    headers={"Retry-After": str(fault.retry_after)},
                )
            if request.method not in methods:
                return error_response(
                    405, "method_not_allowed", f"use {', '.join(methods)}", headers={"Allow": ", ".join(methods)}
                )
            if bearer and not selectors.access_token_valid(token=_bearer(request)):
                return error_response(
                    401,
                    "invalid_token",
                    "a valid bearer access token is required",
                    headers={"WWW-Authenticate": 'Bearer error="invalid_token"'},
                )
            try:
                return view(request, *args, **kwargs)
            except ApplicationError as exc:
                return error_response(
                    exc.status_code, exc.extra.get("error", "invalid_request"), exc.message, exc.extra.get("problems")
                )

        return wrapper

    return decorate


def _json_body(request, *, content_types: tuple[str, ...]):
    media_type = request.content_type.lower() if request.content_type else ""
    if media_type not in content_types:
        raise ApplicationError(
            f"Content-Type must be {' or '.join(content_types)}",
            status_code=415,
            extra={"error": "unsupported_media_type"},
        )
    try:
        return json.loads(request.body or b"")
    except (ValueError, UnicodeDecodeError):
        raise ApplicationError("the body is not valid JSON", extra={"error": "invalid_json"})


def _page_args(request) -> tuple[int, int]:
    values = {}
    for name, default in (("start", 0), ("limit", DEFAULT_LIMIT)):
        raw = request.GET.get(name)
        if raw is None:
            values[name] = default
        elif not _INTEGER.match(raw):
            raise ApplicationError(
                f"{name} must be a non-negative integer",
                extra={"error": "invalid_pagination", "problems": [{"field": name, "message": "non-negative integer"}]},
            )
        else:
            values[name] = int(raw)
    if values["limit"] > MAX_LIMIT:
        raise ApplicationError(
            f"limit must not exceed {MAX_LIMIT}",
            extra={"error": "invalid_pagination", "problems": [{"field": "limit", "message": f"at most {MAX_LIMIT}"}]},
        )
    return values["start"], values["limit"]


def _page(request, reader):
    start, limit = _page_args(request)
    items, total = reader(start=start, limit=limit)
    if start > total:
        raise ApplicationError(
            f"start must not exceed the size of the result set ({total})",
            extra={"error": "invalid_pagination", "problems": [{"field": "start", "message": f"at most {total}"}]},
        )
    return json_response(items, headers={"X-Total-Count": str(total)})


# Token
# ------------------------------------------------------------------------------
@endpoint(E.TOKEN, ("POST",), bearer=False)
def token(request):
    """OAuth 2.0 client credentials grant; client authentication in the body or with HTTP Basic."""
    if (request.content_type or "").lower() != "application/x-www-form-urlencoded":
        return error_response(400, "invalid_request", "the token request must be form-encoded")
    client_id, client_secret = request.POST.get("client_id", ""), request.POST.get("client_secret", "")
    scheme, _, value = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "basic":
        try:
            pair = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, ValueError, UnicodeDecodeError):
            pair = ""
        basic_id, _, basic_secret = pair.partition(":")
        client_id, client_secret = unquote(basic_id), unquote(basic_secret)
    grant_type = request.POST.get("grant_type", "")
    if grant_type != "client_credentials":
        return error_response(400, "unsupported_grant_type", "only grant_type=client_credentials is supported")
    try:
        access_token, lifetime = token_issue(
            client_id=client_id, client_secret=client_secret, scope=request.POST.get("scope", "")
        )
    except ApplicationError as exc:
        return error_response(
            exc.status_code,
            "invalid_client",
            exc.message,
            headers={"WWW-Authenticate": 'Basic realm="sandbox"', "Cache-Control": "no-store"},
        )
    document = {"access_token": access_token, "token_type": "Bearer", "expires_in": lifetime}
    if request.POST.get("scope"):
        document["scope"] = request.POST["scope"]
    return json_response(document, headers={"Cache-Control": "no-store", "Pragma": "no-cache"})


# The ten endpoints
# ------------------------------------------------------------------------------
@endpoint(E.ORIGIN, ("GET",))
def origin(request, origin_id):
    """#1: the origin, only with its partner access token and within 300 s."""
    found = selectors.origin_get_valid(
        origin_id=origin_id, partner_access_token=request.headers.get(settings.SVC_PAT_HEADER, "")
    )
    if found is None:
        return error_response(
            401,
            "invalid_origin",
            "origin id and partner access token are not valid together (unknown, mismatched or older than 300 seconds)",
        )
    return json_response(selectors.origin_document(found))


@endpoint(E.TRANSACTION, ("GET",))
def transaction(request, transaction_id):
    """#2"""
    found = selectors.transaction_get(transaction_id=transaction_id)
    if found is None:
        return error_response(404, "not_found", "no such transaction")
    return json_response(selectors.transaction_document(found))


@endpoint(E.RESPONSE, ("PATCH",))
def response(request, transaction_id):
    """#3"""
    payload = _json_body(request, content_types=("application/json",))
    merged = response_patch(
        transaction_id=transaction_id, payload=payload, base_url=selectors.sandbox_base_url(request)
    )
    # The body of #3 is not shown in the spec: the sandbox answers the merged response.
    return json_response({"id": transaction_id, "response": merged.data})


@endpoint(E.RESOURCES, ("POST",))
def resources(request, transaction_id):
    """#4"""
    items = _json_body(request, content_types=("application/json",))
    slots = upload_slots_request(
        transaction_id=transaction_id, items=items, base_url=selectors.sandbox_base_url(request)
    )
    return json_response(slots)


@endpoint(E.UPLOAD, ("PUT",), bearer=False)
def upload(request, slot_id):
    """#5: authorized by the slot's one-time value, not by a bearer token."""
    limit = settings.SANDBOX_UPLOAD_MAX_BYTES
    length = request.META.get("CONTENT_LENGTH")
    if not length:
        if "chunked" in request.headers.get("Transfer-Encoding", "").lower():
            return error_response(411, "length_required", "send Content-Length (chunked uploads are not accepted)")
        length = "0"
    if not length.isdigit():
        return error_response(400, "invalid_request", "Content-Length is not a number")
    if int(length) > limit:
        return error_response(413, "too_large", f"an upload is at most {limit} bytes")
    content = request.read(int(length)) if int(length) else b""
    upload_accept(
        slot_id=slot_id,
        authorization=request.headers.get("Authorization"),
        content_type=request.headers.get("Content-Type"),
        content=content,
    )
    return json_response({"id": slot_id, "size": len(content)})


@endpoint(E.EVENT, ("GET",))
def event(request, transaction_id, event_id):
    """#6"""
    found = selectors.event_get(transaction_id=transaction_id, event_id=event_id)
    if found is None:
        return error_response(404, "not_found", "no such event of this transaction")
    return json_response(selectors.event_document(found))


@endpoint(E.TRANSACTIONS, ("GET",))
def transactions(request):
    """#7"""
    return _page(request, selectors.transactions_page)


@endpoint(E.PRODUCTS, ("GET",))
def products(request):
    """#8"""
    return _page(request, selectors.products_page)


@endpoint(E.PRODUCT, ("PUT", "PATCH"))
def product(request, product_id):
    """#9 (PUT, application/json, full object) and #10 (PATCH, application/merge-patch+json)."""
    if request.method == "PUT":
        document = _json_body(request, content_types=("application/json",))
        stored = product_replace(product_id=product_id, document=document)
    else:
        patch = _json_body(request, content_types=("application/merge-patch+json",))
        stored = product_merge(product_id=product_id, patch=patch)
    return json_response(selectors.product_document(stored))
