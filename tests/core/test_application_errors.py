"""One application error type: every refusal of the domain is an ApplicationError.

Each carries a `message` safe to show, `extra` (details, JSON-serialisable), and its identity: a
`status_code`, a `slug` and a `title`. The one DRF exception handler (`partner.core.api`) answers
any of them in the shape its view declares: `{"message", "extra"}` (the `/v1/` views, and a view
that declares nothing) or application/problem+json (the connector's API), with that status.
Where a refusal has an answer of its own (the webhook's `{"message"}`, the UI's bodies), its view
reads the same fields: tests/inbox/test_receive.py and tests/ui/test_refusal_answers.py hold
those answers to their bytes.
"""

import json

import pytest
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework.renderers import JSONRenderer

from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.connector.views import ConnectorApi, RouteUnknownApi, TokenApi
from partner.core.api import MESSAGE, PROBLEM, PROBLEM_TYPE_BASE, exception_handler
from partner.core.errors import ApplicationError, Unavailable
from partner.fulfillment.automated.fulfillers.base import FulfillmentRefused
from partner.fulfillment.models import FailureCode, OrderStatus
from partner.fulfillment.orders.services import OrderFailed
from partner.fulfillment.orders.states import MoveNotAllowed
from partner.fulfillment.orders.views import OrderStatusApi
from partner.fulfillment.staff.services import StaffActionRefused
from partner.inbox.errors import (
    NotANotification,
    WebhookBodyRefused,
    WebhookRefused,
    WebhookSignatureInvalid,
    WebhookSignerMismatch,
)
from partner.ui.errors import DocumentNotShown, OriginProblem, PanelSessionInvalid, TransactionNotShown, UiRefused

REFUSALS = {
    "product not found": ProductNotFound("The service lists no product 'p'."),
    "product sync": ProductSyncError("Reading the product listing failed"),
    "staff action": StaffActionRefused("The reason is empty."),
    "order failed": OrderFailed(FailureCode.ORDER_REFUSED, "The loan has no property", tell_lender=True),
    "fulfillment refused": FulfillmentRefused("The product holds no UPDATE_STATUS action", tell_lender=False),
    "move not allowed": MoveNotAllowed("an order", OrderStatus.REQUEST_COMPLETED, OrderStatus.FAILED),
    "body too large": WebhookBodyRefused("Request body too large", status_code=413),
    "length required": WebhookBodyRefused("A Content-Length is required", status_code=411),
    "signature": WebhookSignatureInvalid(),
    "signer": WebhookSignerMismatch(),
    "not a notification": NotANotification("eventTime is required"),
    "origin": OriginProblem.coded(400, "origin_missing", "An origin id and partner access token are required."),
    "credentials": OriginProblem("Wrong password", extra={"status": "Wrong password", "product": "P"}, status_code=401),
    "panel session": PanelSessionInvalid("the panel session has expired"),
    "transaction": TransactionNotShown(),
    "document": DocumentNotShown(),
    "unavailable": Unavailable("The service is unavailable for a moment."),
}


@pytest.mark.parametrize("refusal", REFUSALS.values(), ids=REFUSALS.keys())
def test_every_refusal_is_an_application_error_with_the_handlers_shape(refusal):
    assert isinstance(refusal, ApplicationError)
    assert isinstance(refusal.message, str) and refusal.message
    assert str(refusal) == refusal.message
    assert isinstance(refusal.extra, dict)
    json.dumps(refusal.extra)  # serialisable as it is
    assert isinstance(refusal.status_code, int) and 400 <= refusal.status_code < 600


@pytest.mark.parametrize("refusal", REFUSALS.values(), ids=REFUSALS.keys())
def test_the_api_handler_renders_every_refusal(refusal):
    response = exception_handler(refusal, {})
    assert response.status_code == refusal.status_code
    assert json.loads(JSONRenderer().render(response.data)) == {"message": refusal.message, "extra": refusal.extra}


@pytest.mark.parametrize("refusal", REFUSALS.values(), ids=REFUSALS.keys())
def test_the_connectors_views_answer_every_refusal_as_a_problem_of_its_identity(refusal):
    response = exception_handler(refusal, {"view": ConnectorApi()})
    assert response.status_code == refusal.status_code and response.content_type == "application/problem+json"
    expected = {
        "type": PROBLEM_TYPE_BASE + refusal.slug,
        "title": refusal.title,
        "status": refusal.status_code,
        "detail": refusal.message,
    }
    if refusal.extra:
        expected["errors"] = refusal.extra
    assert json.loads(JSONRenderer().render(response.data)) == expected
    assert response.get("Retry-After") == (str(refusal.retry_after) if refusal.retry_after else None)


def test_the_view_declares_the_shape_not_the_url():
    """One handler, one identity: the view's `error_shape` picks the body, whatever the path."""
    assert [view.error_shape for view in (ConnectorApi, TokenApi, RouteUnknownApi)] == [PROBLEM] * 3
    assert getattr(OrderStatusApi, "error_shape", MESSAGE) is MESSAGE
    taken = StaffActionRefused("Take the order first.")
    as_message = exception_handler(taken, {"view": OrderStatusApi()})
    as_problem = exception_handler(taken, {"view": ConnectorApi()})
    assert as_message.status_code == as_problem.status_code == 422
    assert as_message.data == {"message": "Take the order first.", "extra": {}}
    assert as_problem.data["type"].endswith("/answer-refused") and as_problem.data["detail"] == "Take the order first."


def _application_errors(kind=ApplicationError):
    for sub in kind.__subclasses__():
        yield sub
        yield from _application_errors(sub)


def test_each_slug_names_one_identity():
    """No two kinds answer one `type` with another title or status: a client branching on the
    slug meets one meaning (the connector once had a ProductNotFound of its own beside the
    catalog's, told apart from it only by a table of class names)."""
    kinds = [kind for kind in _application_errors() if kind.__module__.startswith("partner.")]
    assert len(kinds) >= 15
    identities = {}
    for kind in kinds:
        assert kind.slug and kind.slug == kind.slug.lower() and " " not in kind.slug, kind
        assert kind.title, kind
        if kind.slug != ApplicationError.slug:
            identity = (kind.title, kind.status_code)
            assert identities.setdefault(kind.slug, identity) == identity, kind
    assert {"order-not-found", "taken-over", "product-not-found", "answer-refused", "no-connection"} <= set(identities)


def test_django_errors_raised_in_a_view_answer_in_its_shape():
    """Django's 404, 403 and validation errors are the framework's identities in both shapes (a
    PermissionDenied in a connector view was a 500)."""
    denied = exception_handler(DjangoPermissionDenied("no"), {"view": ConnectorApi()})
    assert denied.status_code == 403 and denied.data["type"].endswith("/forbidden")
    invalid = exception_handler(DjangoValidationError({"text": ["Too long."]}), {"view": ConnectorApi()})
    assert invalid.status_code == 400 and invalid.data["errors"] == {"text": ["Too long."]}
    assert exception_handler(Http404("gone"), {"view": OrderStatusApi()}).data == {"message": "gone", "extra": {}}


def test_the_webhooks_refusals_carry_their_answer():
    answers = {
        name: (refusal.status_code, refusal.message)
        for name, refusal in REFUSALS.items()
        if isinstance(refusal, WebhookRefused)
    }
    assert answers == {
        "body too large": (413, "Request body too large"),
        "length required": (411, "A Content-Length is required"),
        "signature": (401, "Invalid or missing signature"),
        "signer": (401, "Invalid or missing signature"),
        "not a notification": (400, "Not a webhook notification: eventTime is required"),
    }
    assert REFUSALS["not a notification"].extra == {"reason": "eventTime is required"}


def test_the_uis_refusals_carry_the_body_the_page_reads():
    def body(code, message):
        return {"errors": [{"status": None, "code": code, "message": message}]}

    answers = {
        name: (refusal.status_code, refusal.extra)
        for name, refusal in REFUSALS.items()
        if isinstance(refusal, UiRefused)
    }
    assert answers == {
        "origin": (400, body("origin_missing", "An origin id and partner access token are required.")),
        "credentials": (401, {"status": "Wrong password", "product": "P"}),
        "panel session": (
            401,
            body("panel_session_expired", "The page's session has ended: renew the origin and ask again."),
        ),
        "transaction": (404, body("transaction_unknown", "No such order for this product.")),
        "document": (404, body("document_unknown", "No such document for this order.")),
    }
    assert REFUSALS["panel session"].reason == "the panel session has expired"


def test_the_fulfillment_refusals_keep_their_details_in_extra():
    failed, refused, move = REFUSALS["order failed"], REFUSALS["fulfillment refused"], REFUSALS["move not allowed"]
    assert (failed.code, failed.tell_lender, failed.message) == ("order_refused", True, "The loan has no property")
    assert failed.extra == {"code": "order_refused", "tell_lender": True}
    assert (refused.tell_lender, refused.extra) == (False, {"tell_lender": False})
    assert move.message == "an order cannot move from REQUEST_COMPLETED to FAILED"
    assert (move.status_code, move.extra) == (409, {"current": "REQUEST_COMPLETED", "to": "FAILED"})
