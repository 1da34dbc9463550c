"""Staff-worked orders, rule by rule, with the services called directly and a fake of the service.

Acknowledgement on arrival, the take, each action's checks, the deliveries' steps and their
resumption, confirmation by the "processed" callback, completion, decline and the overdue e-mail.
The lifecycle over real HTTP with a real worker is in `test_staff_lifecycle.py`.
"""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from partner.fulfillment.enqueue import STAFF_NOTICE_TASK
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, Order, OrderDocument, OrderStatus
from partner.fulfillment.orders.metrics import ORDERS_FINISHED
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.runs import order_run
from partner.fulfillment.sending.callbacks import order_event_handle
from partner.fulfillment.staff import notices
from partner.fulfillment.staff import services as staff
from partner.fulfillment.staff.fulfillers import StaffWorkedFulfiller
from partner.platform.errors import ServiceUnavailableError, ServiceValidationError
from tests.helpers.orders import deliveries_sent
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db(transaction=True)

TXN = "txn-staff-1"
LOAN = {
    "loanNumber": "LN-2026-0042",
    "borrower": {"firstName": "Dana", "lastName": "Whitfield"},
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "state": "CA", "postalCode": "94105"},
}
PDF = b"%PDF-1.7\n% an appraisal report\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
APPRAISAL_ENTITLEMENTS = {
    "data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "response": {"fields": ["property", "appraisal"]}}]}
}


def pdf(name="report.pdf", content=PDF):
    return SimpleUploadedFile(name, content, content_type="application/pdf")


@pytest.fixture
def appraiser():
    return get_user_model().objects.create_user("appraiser.ann", "ann@partner.example", "pw-ann-12345", is_staff=True)


@pytest.fixture
def other_staff():
    return get_user_model().objects.create_user("appraiser.bob", "bob@partner.example", "pw-bob-12345", is_staff=True)


@pytest.fixture
def order(fake_platform, settings):
    """A staff-worked order, acknowledged by the pipeline."""
    settings.PUBLIC_BASE_URL = "https://partner.example"
    product = product_create(
        name="appraisal",
        fulfiller="staff_worked",
        turnaround_hours=48,
        staff_email="appraisals@partner.example",
        raw={"name": "appraisal", "entitlements": APPRAISAL_ENTITLEMENTS},
    )
    fake_platform.transaction_add(
        TXN,
        request={
            "type": "NEW_REQUEST",
            "loan": LOAN,
            "credentials": LENDER_CREDENTIALS,
            "options": {"comments": "Gate code 1234"},
        },
        product_name=product.name,
    )
    order, _, _ = order_open(transaction_id=TXN, product_name=product.name)
    order_run(order_id=order.pk)
    order.refresh_from_db()
    return order


def sent(fake_platform) -> list[dict]:
    return [payload for _, payload in fake_platform.called("patch_response")]


def processed(fake_platform, event_id, version=None):
    details = {"responseVersion": version} if version is not None else {}
    fake_platform.events[(TXN, event_id)] = {
        "id": event_id,
        "type": "urn:svc:platform:transaction:response:processed",
        **({"details": details} if details else {}),
    }
    order_event_handle(resource_ref=f"http://127.0.0.1:8000/sandbox/partner/v2/transactions/{TXN}/events/{event_id}")


# The product and the acknowledgement ---------------------------------------------------------------


def test_an_interactive_only_product_is_staff_worked_by_default():
    assert StaffWorkedFulfiller.is_default_for({"tags": {"workflows": ["interactive"]}})
    assert not StaffWorkedFulfiller.is_default_for({"tags": {"workflows": ["interactive", "automated"]}})
    assert not StaffWorkedFulfiller.is_default_for({"tags": {"workflows": ["automated"]}})
    assert not StaffWorkedFulfiller.is_default_for({})


def test_an_order_is_checked_and_acknowledged_at_once_with_one_patch(fake_platform, order):
    assert fake_platform.names() == ["get_transaction", "patch_response"]
    [ack] = sent(fake_platform)
    assert ack["status"] == "processing" and ack["partnerStatus"] == "Order received"
    assert ack["referenceNumber"].startswith("OR-") and ack["respondingParty"]["name"]
    assert order.status == OrderStatus.WITH_STAFF and order.staff_worked
    assert order.loan_number == "LN-2026-0042"
    assert order.request["options"] == {"comments": "Gate code 1234"}
    assert "credentials" not in order.request  # the lender's password is never kept
    assert order.due_at == order.created_at + timedelta(hours=48)
    [delivery] = order.deliveries.all()
    assert (delivery.kind, delivery.state, delivery.sequence) == (DeliveryKind.ACKNOWLEDGEMENT, DeliveryState.SENT, 1)


def test_staff_are_told_of_a_new_order_with_what_they_triage_by_and_no_borrowers_data(tasks_sent, order):
    assert (STAFF_NOTICE_TASK, {"order_id": order.pk, "notice": notices.NEW_ORDER}) in tasks_sent
    assert mail.outbox == []  # the task sends it, not the sender's transaction
    assert notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER)
    [message] = mail.outbox
    assert message.to == ["appraisals@partner.example"]
    assert order.reference_number in message.subject and "San Francisco, CA" in message.subject
    due = f"Due: {order.due_at:%Y-%m-%d %H:%M} UTC"
    for shown in ("Loan number: LN-2026-0042", "Property: San Francisco, CA", due):
        assert shown in message.body
    assert f"https://partner.example/admin/fulfillment/stafforder/{order.pk}/change/" in message.body
    for private in ("Howard", "Whitfield", "Dana", "94105"):
        assert private not in message.subject + message.body
    order.refresh_from_db()
    assert order.staff_notified_at is not None
    assert not notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER)  # once
    assert len(mail.outbox) == 1


def refused_order(fake_platform) -> Order:
    """A staff-worked order whose lender's credentials are refused, after its one run."""
    product_create(name="appraisal", fulfiller="staff_worked")
    fake_platform.transaction_add(
        TXN, request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": {"username": "x", "password": "y"}},
        product_name="appraisal",
    )  # fmt: skip
    order, _, _ = order_open(transaction_id=TXN, product_name="appraisal")
    order_run(order_id=order.pk)
    return order


def test_an_order_with_refused_credentials_is_answered_as_today(fake_platform):
    order = refused_order(fake_platform)
    done = Order.objects.get(pk=order.pk)
    assert done.status == OrderStatus.FAILED
    # No acknowledgement: the lender is told why, as for an automated order.
    [notice] = done.deliveries.all()
    assert (notice.kind, notice.state) == (DeliveryKind.FAILURE_NOTICE, DeliveryState.SENT)
    assert fake_platform.called("patch_response") == [(TXN, {"partnerStatus": notice.partner_status})]
    assert mail.outbox == []


def test_the_acknowledgements_callback_confirms_it_and_leaves_the_order_with_staff(fake_platform, order):
    processed(fake_platform, "ev-1")
    order.refresh_from_db()
    assert order.status == OrderStatus.WITH_STAFF
    assert order.deliveries.get().state == DeliveryState.CONFIRMED


# The take ------------------------------------------------------------------------------------------


def test_one_staff_member_takes_an_order_and_another_must_say_they_take_it_over(order, appraiser, other_staff):
    staff.order_take(order_id=order.pk, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="appraiser.ann works this order"):
        staff.order_take(order_id=order.pk, user=other_staff)
    with pytest.raises(staff.StaffActionRefused, match="take it over first"):
        staff.status_update_post(order_id=order.pk, text="Inspection booked", user=other_staff)
    staff.order_take(order_id=order.pk, user=other_staff, take_over=True)
    order.refresh_from_db()
    assert order.assigned_to == other_staff
    assert order.steps.filter(name="taken_over", actor="appraiser.bob", detail="from appraiser.ann").exists()


def test_nobody_acts_on_an_order_nobody_took(order, appraiser):
    with pytest.raises(staff.StaffActionRefused, match="Take the order first"):
        staff.status_update_post(order_id=order.pk, text="x", user=appraiser)
    assert order.deliveries.count() == 1


# Status updates and documents ----------------------------------------------------------------------


def test_a_status_update_is_stored_then_sent_by_a_worker(fake_platform, order, appraiser, tasks_sent):
    staff.order_take(order_id=order.pk, user=appraiser)
    delivery = staff.status_update_post(order_id=order.pk, text="  Inspection booked for Tuesday ", user=appraiser)
    assert delivery.state == DeliveryState.PENDING and delivery.partner_status == "Inspection booked for Tuesday"
    assert ("fulfillment.order_run", {"order_id": order.pk}) in tasks_sent

    assert deliveries_sent(order_id=order.pk) == 1
    update = sent(fake_platform)[-1]
    assert update == {
        "status": "processing",
        "referenceNumber": order.reference_number,
        "partnerStatus": "Inspection booked for Tuesday",
    }
    delivery.refresh_from_db()
    assert (delivery.state, delivery.sequence) == (DeliveryState.SENT, 2)
    assert deliveries_sent(order_id=order.pk) == 0  # never sent twice


@pytest.mark.parametrize(
    "text, message", [("", "empty"), ("x" * 501, "at most 500"), ("line\x00break", "control character")]
)
def test_a_bad_status_update_is_refused_and_changes_nothing(order, appraiser, text, message):
    staff.order_take(order_id=order.pk, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match=message):
        staff.status_update_post(order_id=order.pk, text=text, user=appraiser)
    assert order.deliveries.count() == 1


def test_documents_are_files_checked_by_content_and_size(order, appraiser, settings):
    staff.order_take(order_id=order.pk, user=appraiser)
    document = staff.document_attach(order_id=order.pk, upload=pdf("../../etc/Report 1.pdf"), user=appraiser)
    assert (document.name, document.mime_type, document.size) == ("Report 1.pdf", "application/pdf", len(PDF))
    assert document.read() == PDF and document.file.name.startswith(f"documents/{TXN}/")
    photo = staff.document_attach(order_id=order.pk, upload=SimpleUploadedFile("front", PNG), user=appraiser)
    assert (photo.name, photo.mime_type) == ("front.png", "image/png")

    with pytest.raises(staff.StaffActionRefused, match="Only PDF, PNG and JPEG"):
        staff.document_attach(order_id=order.pk, upload=pdf("fake.pdf", b"MZ\x90\x00 an executable"), user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="empty"):
        staff.document_attach(order_id=order.pk, upload=pdf("empty.pdf", b""), user=appraiser)
    settings.DOCUMENT_MAX_BYTES = 10
    with pytest.raises(staff.StaffActionRefused, match="at most 0 MB"):
        staff.document_attach(order_id=order.pk, upload=pdf(), user=appraiser)
    assert order.attachments.count() == 2


def test_a_waiting_document_can_be_removed_with_its_file(order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    document = staff.document_attach(order_id=order.pk, upload=pdf(), user=appraiser)
    storage, name = document.file.storage, document.file.name
    staff.document_remove(attachment_id=document.pk, user=appraiser)
    assert not OrderDocument.objects.filter(pk=document.pk).exists()
    assert not storage.exists(name)


# Deliveries ----------------------------------------------------------------------------------------


def test_a_partial_then_a_final_delivery_each_with_its_documents(fake_platform, order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    staff.document_attach(order_id=order.pk, upload=pdf("draft.pdf"), user=appraiser)
    partial = staff.delivery_request(
        order_id=order.pk, final=False, partner_status="Draft report attached", user=appraiser
    )
    staff.document_attach(order_id=order.pk, upload=pdf("final.pdf"), user=appraiser)
    final = staff.delivery_request(
        order_id=order.pk,
        final=True,
        partner_status="Appraisal complete",
        loan={"appraisal": {"appraisedValue": 812000, "effectiveDate": "2026-11-20", "condition": "C3"}},
        user=appraiser,
    )
    assert [d.name for d in partial.attachments.all()] == ["draft.pdf"]
    assert [d.name for d in final.attachments.all()] == ["final.pdf"]

    assert deliveries_sent(order_id=order.pk) == 2
    assert fake_platform.names()[2:] == [
        "request_upload_slots", "upload_resource", "patch_response",
        "request_upload_slots", "upload_resource", "patch_response",
    ]  # fmt: skip
    first, second = sent(fake_platform)[1:]
    assert first["status"] == "processing" and [r["name"] for r in first["resources"]] == ["draft.pdf"]
    assert second["status"] == "completed" and [r["name"] for r in second["resources"]] == ["final.pdf"]
    appraisal = {"appraisedValue": 812000, "effectiveDate": "2026-11-20", "condition": "C3"}
    assert second["loan"] == {"appraisal": appraisal} and second["loanFormat"]
    order.refresh_from_db()
    assert order.status == OrderStatus.RESPONSE_DELIVERED and order.delivered_at is not None

    # The callbacks confirm each delivery; the final one completes the order.
    processed(fake_platform, "ev-1")  # names no version: the oldest not confirmed, the acknowledgement
    order.refresh_from_db()
    assert order.status == OrderStatus.RESPONSE_DELIVERED
    processed(fake_platform, "ev-2", version=2)
    order.refresh_from_db()
    assert order.status == OrderStatus.RESPONSE_DELIVERED
    assert Delivery.objects.get(pk=partial.pk).state == DeliveryState.CONFIRMED
    processed(fake_platform, "ev-3")  # then the final delivery
    order.refresh_from_db()
    assert order.status == OrderStatus.REQUEST_COMPLETED
    assert set(order.deliveries.values_list("state", flat=True)) == {DeliveryState.CONFIRMED}


def test_a_callback_naming_a_version_we_have_no_record_of_confirms_the_oldest_accepted_only(
    fake_platform, order, appraiser
):
    # The acknowledgement (version 1) and a status update (version 2) accepted, neither confirmed.
    staff.order_take(order_id=order.pk, user=appraiser)
    update = staff.status_update_post(order_id=order.pk, text="Inspection booked", user=appraiser)
    assert deliveries_sent(order_id=order.pk) == 1
    acknowledgement = order.deliveries.get(kind=DeliveryKind.ACKNOWLEDGEMENT)
    assert [acknowledgement.sequence, Delivery.objects.get(pk=update.pk).sequence] == [1, 2]

    processed(fake_platform, "ev-1", version=9)  # not one of ours: as if it named none

    assert Delivery.objects.get(pk=acknowledgement.pk).state == DeliveryState.CONFIRMED
    assert Delivery.objects.get(pk=update.pk).state == DeliveryState.SENT  # not before version 9: its own callback's
    processed(fake_platform, "ev-2", version=2)
    assert Delivery.objects.get(pk=update.pk).state == DeliveryState.CONFIRMED


def test_nothing_can_be_done_after_the_final_delivery(order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    staff.delivery_request(order_id=order.pk, final=True, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="final delivery or the decline is already made"):
        staff.status_update_post(order_id=order.pk, text="one more thing", user=appraiser)


def test_a_delivery_carries_only_the_loan_fields_the_product_may_send(order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match=r"may not send Borrower \(loan.borrower\)"):
        staff.delivery_request(order_id=order.pk, final=True, loan={"borrower": {"name": "x"}}, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match=r"Subject property \(loan.property\) must be an object"):
        staff.delivery_request(order_id=order.pk, final=True, loan={"property": "x"}, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="does not hold the UPDATE_DISCLOSURE_STATUS action"):
        result = {
            "format": "application/vnd.disclosure.update-status-1.0.0.json",
            "action": "UPDATE_DISCLOSURE_STATUS",
            "details": {"status": "active"},
        }
        staff.delivery_request(order_id=order.pk, final=True, result=result, user=appraiser)
    # The product's response form is checked again here, whatever drew the form.
    with pytest.raises(staff.StaffActionRefused, match="Appraisal, Effective date: enter a value"):
        staff.delivery_request(order_id=order.pk, final=True, loan={"appraisal": {"appraisedValue": 1}}, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="Appraisal, Condition: 'C9' is not one of its choices"):
        bad = {"appraisedValue": 1, "effectiveDate": "2026-11-20", "condition": "C9"}
        staff.delivery_request(order_id=order.pk, final=True, loan={"appraisal": bad}, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match=r"Effective date: '20/11/2026' is not a date \(YYYY-MM-DD\)"):
        bad = {"appraisedValue": 1, "effectiveDate": "20/11/2026"}
        staff.delivery_request(order_id=order.pk, final=True, loan={"appraisal": bad}, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="needs something to deliver"):
        staff.delivery_request(order_id=order.pk, final=False, user=appraiser)
    assert order.deliveries.count() == 1


def test_a_delivery_resumes_after_the_service_was_away_and_is_sent_once(fake_platform, order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    staff.document_attach(order_id=order.pk, upload=pdf(), user=appraiser)
    staff.delivery_request(order_id=order.pk, final=True, user=appraiser)
    error = ServiceUnavailableError("PATCH: unavailable", status=503, method="PATCH", url="x")
    fake_platform.fail("patch_response", error)
    with pytest.raises(ServiceUnavailableError):
        deliveries_sent(order_id=order.pk)
    assert deliveries_sent(order_id=order.pk) == 1
    # One slot request and one upload: the retry went on from the PATCH.
    assert fake_platform.names()[2:] == ["request_upload_slots", "upload_resource", "patch_response", "patch_response"]
    assert order.deliveries.get(kind=DeliveryKind.FINAL).state == DeliveryState.SENT


def test_a_delivery_the_service_refuses_fails_with_its_reason_and_can_be_sent_again(fake_platform, order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    delivery = staff.status_update_post(order_id=order.pk, text="Booked", user=appraiser)
    refused = ServiceValidationError("response update: refused", status=400, method="PATCH", url="x")
    fake_platform.fail("patch_response", refused)
    assert deliveries_sent(order_id=order.pk) == 0
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.FAILED and "refused" in delivery.failure_reason

    staff.delivery_retry(delivery_id=delivery.pk, user=appraiser)
    assert deliveries_sent(order_id=order.pk) == 1
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.SENT


def test_a_decline_tells_the_lender_why_and_ends_the_order(fake_platform, order, appraiser):
    staff.order_take(order_id=order.pk, user=appraiser)
    with pytest.raises(staff.StaffActionRefused, match="reason is empty"):
        staff.order_decline(order_id=order.pk, reason=" ", user=appraiser)
    declined_before = ORDERS_FINISHED.labels("appraisal", "declined")._value.get()
    staff.order_decline(order_id=order.pk, reason="The property is outside our area", user=appraiser)
    deliveries_sent(order_id=order.pk)
    decline = sent(fake_platform)[-1]
    assert decline["status"] == "completed"
    assert decline["partnerStatus"] == "Order declined: The property is outside our area"
    order.refresh_from_db()
    assert order.status == OrderStatus.DECLINED
    assert ORDERS_FINISHED.labels("appraisal", "declined")._value.get() == declined_before + 1


# Overdue -------------------------------------------------------------------------------------------


def test_staff_are_told_once_of_an_order_past_its_due_time(tasks_sent, order):
    notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER)
    mail.outbox.clear()
    tasks_sent.clear()
    assert notices.notices_due() == 0
    Order.objects.filter(pk=order.pk).update(due_at=timezone.now() - timedelta(minutes=1))
    assert notices.notices_due() == 1
    assert tasks_sent == [(STAFF_NOTICE_TASK, {"order_id": order.pk, "notice": notices.PAST_DUE})]
    assert notices.notices_due() == 0  # enqueued: its task may still be retrying
    assert notices.staff_notice_send(order_id=order.pk, notice=notices.PAST_DUE)
    assert not notices.staff_notice_send(order_id=order.pk, notice=notices.PAST_DUE)
    [message] = mail.outbox
    assert message.subject.startswith("Order past due")
    assert order.steps.filter(name="overdue").count() == 1


def test_the_callback_of_a_failure_notice_confirms_it_and_writes_no_history(fake_platform):
    """The lender told why an order failed: the service's "processed" event confirms that notice,
    and the failed order's history says what happened (failed, lender told), not the event."""
    order = refused_order(fake_platform)
    processed(fake_platform, "ev-notice", version=1)

    notice = Delivery.objects.get(order=order)
    assert (notice.kind, notice.state) == (DeliveryKind.FAILURE_NOTICE, DeliveryState.CONFIRMED)
    assert list(order.steps.values_list("name", flat=True)) == ["opened", "failed", "lender_told"]
    assert Order.objects.get(pk=order.pk).status == OrderStatus.FAILED
