"""The rules of an order's run, each on its own, against a fake of the service's client (no HTTP, no worker).

A run (`partner.fulfillment.runs.order_run`) resumes after the last recorded step, works only an
order whose lease it takes, retries what is transient and fails what is not. The end-to-end tests over real HTTP and
a real worker (`test_pipeline.py`, `test_worker_killed.py`) prove the same path for real; these
prove each rule in milliseconds and say which one broke.
"""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from partner.fulfillment.automated.fulfillers import FULFILLERS, Attachment, Fulfiller, Fulfillment
from partner.fulfillment.models import FailureCode, Order, OrderStatus, OrderStep
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_run
from partner.platform.errors import ServiceUnavailableError, ServiceValidationError
from tests.helpers.orders import LOAN_RIGHT, order_ran
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db

TXN = "txn-rules-1"
LOAN = LOAN_RIGHT  # right as sent
FULL_RUN = ["get_transaction", "request_upload_slots", "upload_resource", "patch_response"]


def unavailable(what: str) -> ServiceUnavailableError:
    return ServiceUnavailableError(f"{what}: service unavailable", status=503, method="POST", url=settings.SVC_BASE_URL)


def order_placed(fake_platform, *, product="address-verification", credentials=LENDER_CREDENTIALS) -> Order:
    """A transaction on the (fake) service and its order, as the transaction webhook opens it."""
    fake_platform.transaction_add(
        TXN, request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": credentials}, product_name=product
    )
    order, _, _ = order_open(transaction_id=TXN, product_name=product)
    return order


@pytest.fixture
def order(fake_platform):
    product_create()
    return order_placed(fake_platform)


def steps(order: Order) -> list[str]:
    return list(OrderStep.objects.filter(order=order).values_list("name", flat=True))


def test_a_full_run_makes_the_four_calls_and_delivers_the_report(fake_platform, order):
    done = order_ran(order_id=order.pk)

    assert fake_platform.names() == FULL_RUN
    assert done.status == OrderStatus.RESPONSE_DELIVERED
    assert done.claimed_until is None and done.attempts == 1
    [(slot_id, content)] = fake_platform.called("upload_resource")
    assert content.startswith(b"%PDF")
    [(transaction_id, payload)] = fake_platform.called("patch_response")
    assert transaction_id == TXN
    assert payload["status"] == "completed" and payload["referenceNumber"].startswith("AV-")
    assert [resource["id"] for resource in payload["resources"]] == [slot_id] == [done.resource_id]
    assert done.ordered_by.username == "lender.demo"


def test_resume_after_prepared_does_not_read_the_transaction_again(fake_platform, order):
    fake_platform.fail("request_upload_slots", unavailable("upload slot request"))
    with pytest.raises(ServiceUnavailableError):
        order_ran(order_id=order.pk)
    assert fake_platform.names() == ["get_transaction", "request_upload_slots"]

    fake_platform.calls.clear()
    done = order_ran(order_id=order.pk)

    assert fake_platform.names() == ["request_upload_slots", "upload_resource", "patch_response"]
    assert done.status == OrderStatus.RESPONSE_DELIVERED
    assert done.attachments.count() == 1  # the fulfiller's report, stored once
    assert steps(order).count("prepared") == 1


def test_resume_after_slots_requested_does_not_ask_for_slots_again(fake_platform, order):
    fake_platform.fail("upload_resource", unavailable("upload"))
    with pytest.raises(ServiceUnavailableError):
        order_ran(order_id=order.pk)
    [(_, [first_slot_request])] = fake_platform.called("request_upload_slots")

    fake_platform.calls.clear()
    done = order_ran(order_id=order.pk)

    assert fake_platform.names() == ["upload_resource", "patch_response"]
    [(slot_id, _)] = fake_platform.called("upload_resource")
    assert slot_id == "res-1"  # the slot the first run was given
    assert first_slot_request["name"] == done.attachments.get().name


class TwoDocumentsFulfiller(Fulfiller):
    """A fulfiller that attaches two files, for the upload-by-upload resume."""

    key = "two_documents"
    label = "Two documents"

    def fulfill(self, *, transaction_id, request, product):
        return Fulfillment(
            response={"status": "completed", "partnerStatus": "Two documents"},
            attachments=[
                Attachment(name="first.txt", mime_type="text/plain", content=b"first document"),
                Attachment(name="second.txt", mime_type="text/plain", content=b"second document"),
            ],
        )


def test_resume_after_one_of_two_uploads_uploads_only_the_other(fake_platform, monkeypatch):
    monkeypatch.setitem(FULFILLERS, TwoDocumentsFulfiller.key, TwoDocumentsFulfiller)
    product_create(name="two-documents", fulfiller=TwoDocumentsFulfiller.key)
    order = order_placed(fake_platform, product="two-documents")
    fake_platform.fail("upload_resource", unavailable("upload"), after=1)
    with pytest.raises(ServiceUnavailableError):
        order_ran(order_id=order.pk)
    assert fake_platform.called("upload_resource")[0] == ("res-1", b"first document")

    fake_platform.calls.clear()
    done = order_ran(order_id=order.pk)

    assert fake_platform.names() == ["upload_resource", "patch_response"]
    assert fake_platform.called("upload_resource") == [("res-2", b"second document")]
    [(_, payload)] = fake_platform.called("patch_response")
    assert [resource["id"] for resource in payload["resources"]] == ["res-1", "res-2"]
    assert done.status == OrderStatus.RESPONSE_DELIVERED


def test_resume_after_delivered_sends_no_second_patch(fake_platform, order):
    order_ran(order_id=order.pk)
    # A worker killed between recording the delivery and moving the status leaves it so.
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.IN_PROGRESS)

    fake_platform.calls.clear()
    order_ran(order_id=order.pk)

    assert fake_platform.calls == []  # its one delivery is recorded as sent: nothing left to send
    assert steps(order).count("delivered") == 1


def test_an_order_another_worker_holds_is_not_worked(fake_platform, order):
    held_until = timezone.now() + timedelta(seconds=60)
    Order.objects.filter(pk=order.pk).update(claimed_until=held_until)

    assert 58 <= order_run(order_id=order.pk).held_for <= 60

    assert fake_platform.calls == []
    order.refresh_from_db()
    assert order.claimed_until == held_until  # still the other worker's
    assert order.attempts == 0 and order.status == OrderStatus.VALIDATION_REQUESTED


def test_an_expired_lease_is_taken(fake_platform, order):
    # The worker that held it died: its lease ran out a second ago.
    Order.objects.filter(pk=order.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))

    done = order_ran(order_id=order.pk)

    assert fake_platform.names() == FULL_RUN
    assert done.status == OrderStatus.RESPONSE_DELIVERED
    assert done.attempts == 1 and done.claimed_until is None


def test_a_transient_error_propagates_and_leaves_the_order_active_with_the_lease_released(fake_platform, order):
    fake_platform.fail("get_transaction", unavailable("transaction retrieval"))

    with pytest.raises(ServiceUnavailableError):
        order_ran(order_id=order.pk)

    order.refresh_from_db()
    assert order.status == OrderStatus.VALIDATION_REQUESTED and not order.failure_code
    assert order.claimed_until is None
    assert "service unavailable" in order.last_error
    # Released, so the task's retry takes it at once.
    fake_platform.calls.clear()
    Order.objects.filter(pk=order.pk).update(next_attempt_at=None)
    assert order_ran(order_id=order.pk).status == OrderStatus.RESPONSE_DELIVERED
    assert fake_platform.names() == FULL_RUN


def test_a_permanent_4xx_fails_the_order_with_service_rejected(fake_platform, order):
    refused = ServiceValidationError(
        "response delivery rejected",
        status=422,
        method="PATCH",
        url=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}/response",
    )
    fake_platform.fail("patch_response", refused)

    done = order_ran(order_id=order.pk)  # not raised: nothing to retry

    assert done.status == OrderStatus.FAILED
    assert done.failure_code == FailureCode.SERVICE_REJECTED
    assert done.failure_reason == f"The service refused PATCH /partner/v2/transactions/{TXN}/response with status 422"
    assert done.claimed_until is None
    assert fake_platform.names() == FULL_RUN  # the PATCH was sent once, not again


def test_invalid_credentials_fail_the_order_and_tell_the_lender(fake_platform):
    product_create()
    order = order_placed(fake_platform, credentials={**LENDER_CREDENTIALS, "password": "not-the-password-9"})

    done = order_ran(order_id=order.pk)

    assert done.status == OrderStatus.FAILED
    assert done.failure_code == FailureCode.CREDENTIALS_INVALID
    assert "not-the-password-9" not in done.failure_reason
    assert fake_platform.names() == ["get_transaction", "patch_response"]  # no slot, no upload
    [(transaction_id, payload)] = fake_platform.called("patch_response")
    assert transaction_id == TXN
    assert payload == {"partnerStatus": f"Order not fulfilled: {done.failure_reason}"}
    assert "lender_told" in steps(order)


def test_missing_credentials_fail_the_order(fake_platform):
    product_create()
    order = order_placed(fake_platform, credentials={})

    done = order_ran(order_id=order.pk)

    assert done.status == OrderStatus.FAILED
    assert done.failure_code == FailureCode.CREDENTIALS_INVALID
    assert fake_platform.names() == ["get_transaction", "patch_response"]  # no slot, no upload


def test_a_transaction_gone_from_the_service_fails_the_order_at_once(fake_platform):
    """A 4xx is the service's answer, not an outage: the order fails with the reason, no retry."""
    product_create()
    order, _, _ = order_open(transaction_id="txn-gone", product_name="address-verification")  # the fake has none

    done = order_ran(order_id=order.pk)  # not raised: nothing to retry

    assert done.status == OrderStatus.FAILED
    assert done.failure_code == FailureCode.SERVICE_REJECTED
    assert "404" in done.failure_reason
    assert fake_platform.called("get_transaction") == [("txn-gone",)]  # asked once, not again


# An upload whose outcome is unknown -------------------------------------------------------------


def test_an_upload_cut_off_by_a_dead_worker_goes_to_a_fresh_slot(fake_platform, order):
    from partner.fulfillment.models import OrderDocument

    # No answer to the PUT (a timeout; a worker killed mid-PUT leaves the same): the outcome is unknown.
    fake_platform.fail(
        "upload_resource", ServiceUnavailableError("no answer (ReadTimeout)", method="PUT", url=settings.SVC_BASE_URL)
    )
    with pytest.raises(ServiceUnavailableError):
        order_ran(order_id=order.pk)
    attachment = OrderDocument.objects.get(order=order)
    assert attachment.upload_started_at is not None and attachment.uploaded_at is None
    first_slot = attachment.resource_id

    done = order_ran(order_id=order.pk)

    assert done.status == OrderStatus.RESPONSE_DELIVERED
    new_slot = fake_platform.called("request_upload_slots")[-1]
    assert len(new_slot[1]) == 1  # one fresh slot, for the one attachment
    [*_, (uploaded_to, _)] = fake_platform.called("upload_resource")
    assert uploaded_to != first_slot
    [(_, payload)] = fake_platform.called("patch_response")
    assert [resource["id"] for resource in payload["resources"]] == [uploaded_to]
    assert done.resource_id == uploaded_to
    assert "slot_renewed" in steps(done)


def test_a_slot_the_service_says_was_used_goes_to_a_fresh_slot(fake_platform, order):
    already = ServiceValidationError(
        "upload: already uploaded", status=409, method="PUT", url=f"{settings.SVC_BASE_URL}/uploads/res-1"
    )
    fake_platform.fail("upload_resource", already)

    done = order_ran(order_id=order.pk)

    assert done.status == OrderStatus.RESPONSE_DELIVERED
    assert fake_platform.names() == [
        "get_transaction",
        "request_upload_slots",
        "upload_resource",
        "request_upload_slots",
        "upload_resource",
        "patch_response",
    ]
    [(_, payload)] = fake_platform.called("patch_response")
    assert [resource["id"] for resource in payload["resources"]] == ["res-2"]


def test_a_message_for_an_order_another_worker_holds_comes_back_when_the_lease_runs_out(
    fake_platform, order, monkeypatch, django_capture_on_commit_callbacks
):
    """A killed worker's message is redelivered at once, while its lease still runs: the task does
    not drop it (the order would wait for the sweep) but comes back when the lease ends."""
    from config.celery import app
    from partner.fulfillment.tasks import order_run as order_run_task

    Order.objects.filter(pk=order.pk).update(claimed_until=timezone.now() + timedelta(seconds=20))
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **options: sent.append((name, options)))

    with django_capture_on_commit_callbacks(execute=True):
        order_run_task(order_id=order.pk)

    assert fake_platform.names() == []  # the holder's work is not done twice
    [(name, options)] = sent
    assert name == "fulfillment.order_run" and options["kwargs"] == {"order_id": order.pk}
    assert 19 <= options["countdown"] <= 22


def test_a_message_for_a_finished_order_is_dropped(fake_platform, order, monkeypatch):
    from config.celery import app
    from partner.fulfillment.tasks import order_run as order_run_task

    Order.objects.filter(pk=order.pk).update(status=OrderStatus.REQUEST_COMPLETED)
    sent = []
    monkeypatch.setattr(app, "send_task", lambda name, **options: sent.append(name))
    order_run_task(order_id=order.pk)
    assert sent == [] and fake_platform.names() == []
