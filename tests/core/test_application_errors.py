"""One application error type: every refusal of the domain is an ApplicationError.

Each carries a `message` safe to show, `extra` (details, JSON-serialisable) and a `status_code`,
and the one DRF exception handler (`partner.core.api`) turns any of them into `{"message", "extra"}`
with that status. Where a refusal has an answer of its own (the webhook's `{"message"}`, the UI's
bodies), its view reads the same three fields: tests/inbox/test_receive.py and
tests/ui/test_refusal_answers.py hold those answers to their bytes.
"""

import json

import pytest
from rest_framework.renderers import JSONRenderer

from partner.catalog.errors import ProductNotFound, ProductSyncError
from partner.core.api import exception_handler
from partner.core.errors import ApplicationError
from partner.fulfillment.automated.fulfillers.base import FulfillmentRefused
from partner.fulfillment.models import FailureCode, OrderStatus
from partner.fulfillment.orders.services import OrderFailed
from partner.fulfillment.orders.states import MoveNotAllowed
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
