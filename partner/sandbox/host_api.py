"""What the host loan application does, as a JSON API for the sandbox host page.

No bearer token: these stand for the host's own back-end and JavaScript API
(transaction.getOrigin / refreshOrigin, creating a transaction). They exist only
where the sandbox is mounted (SANDBOX_ENABLED). POSTs are CSRF-exempt JSON.
"""

import json

from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt

from partner.core.errors import ApplicationError

# The module is aliased: the views below are named origins, origin_refresh and origin_expire.
from . import origins as origin_services
from . import selectors
from .api import error_response, json_response
from .models import LenderUser, Loan, Origin, Product
from .transactions import transaction_create_from_origin


def _host_view(methods):
    def decorate(view):
        @csrf_exempt
        def wrapper(request, *args, **kwargs):
            if request.method not in methods:
                return error_response(405, "method_not_allowed", f"use {', '.join(methods)}")
            try:
                return view(request, *args, **kwargs)
            except ApplicationError as exc:
                return error_response(
                    exc.status_code, exc.extra.get("error", "invalid_request"), exc.message, exc.extra.get("problems")
                )
            except ObjectDoesNotExist as exc:
                return error_response(404, "not_found", str(exc) or "not found")

        wrapper.__name__ = view.__name__
        wrapper.__doc__ = view.__doc__
        return wrapper

    return decorate


def _body(request) -> dict:
    try:
        document = json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        raise ApplicationError("the body is not valid JSON", extra={"error": "invalid_json"})
    if not isinstance(document, dict):
        raise ApplicationError("the body must be a JSON object", extra={"error": "invalid_json"})
    return document


def _origin_answer(origin: Origin) -> dict:
    answer = {"id": origin.origin_id, "partnerAccessToken": origin.partner_access_token}
    if origin.transaction_id:
        answer["transactionId"] = origin.transaction_id
    return answer


@_host_view(("GET",))
def context(request):
    """Users, loans, products and recent transactions the host page offers."""
    return json_response(selectors.host_context())


@_host_view(("POST",))
def origins(request):
    """transaction.getOrigin: {user_id, loan_id, product_id, transaction_id?} -> {id, partnerAccessToken, ...}"""
    body = _body(request)
    try:
        user = LenderUser.objects.select_related("instance").get(pk=int(body.get("user_id")))
        loan = Loan.objects.select_related("instance").get(pk=int(body.get("loan_id")))
    except (TypeError, ValueError):
        raise ApplicationError("user_id and loan_id must be integers", extra={"error": "invalid_request"})
    product_id = body.get("product_id")
    product = Product.objects.filter(service_id=product_id).first() or Product.objects.get(name=product_id)
    origin = origin_services.origin_create(
        user=user, loan=loan, product=product, transaction=body.get("transaction_id") or None
    )
    return json_response(
        _origin_answer(origin),
    )


@_host_view(("POST",))
def origin_refresh(request, origin_id):
    """transaction.refreshOrigin: a new origin id and partner access token for the same context."""
    origin = Origin.objects.select_related("user__instance", "loan", "product", "transaction").get(origin_id=origin_id)
    return json_response(
        _origin_answer(origin_services.origin_refresh(origin=origin)),
    )


@_host_view(("POST",))
def origin_expire(request, origin_id):
    """Age an origin past its 300 s, to try the expiry path."""
    origin_services.origin_expire(origin=Origin.objects.get(origin_id=origin_id))
    return HttpResponse(status=204)


@_host_view(("POST",))
def transactions(request):
    """A lender creates a transaction on an origin: {origin_id, request: {type?, options?}} -> {transactionId}"""
    body = _body(request)
    origin = Origin.objects.select_related("user__instance", "loan", "product").get(
        origin_id=str(body.get("origin_id") or "")
    )
    request_part = body.get("request") or {}
    if not isinstance(request_part, dict):
        raise ApplicationError("request must be an object", extra={"error": "invalid_request"})
    created = transaction_create_from_origin(
        origin=origin,
        request_type=request_part.get("type") or "NEW_REQUEST",
        options=request_part.get("options"),
        # The webhook's resourceRef uses the sandbox's configured address, not the
        # host page's (a browser may reach it as localhost while the partner uses 127.0.0.1).
        base_url=None,
    )
    return json_response(
        {"transactionId": created.id},
    )
