"""A staff-worked order's whole life over real HTTP against the sandbox, with a real worker.

The lender orders the demo appraisal; the pipeline acknowledges it; a staff member takes it, posts
a status update, delivers a partial and then the final response with documents; each PATCH reaches
the service once, each is confirmed by its "processed" callback, and the final one completes the
order. A staff action made while the service answers 503 is sent once it recovers, exactly once.
"""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, OrderStatus
from partner.fulfillment.staff import services as staff
from partner.sandbox.faults import fault_set, faults_clear
from partner.sandbox.models import Response, UploadSlot
from tests.helpers.orders import order_of
from tests.helpers.sandbox import order_placed
from tests.helpers.urn_words import any_urn_words
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

PDF = b"%PDF-1.7\n% appraisal report\n"


def confirmed(delivery: Delivery, timeout=60) -> Delivery:
    def done():
        row = Delivery.objects.get(pk=delivery.pk)
        return row if row.state == DeliveryState.CONFIRMED else None

    return wait_for(
        done,
        timeout=timeout,
        message=lambda: f"{delivery.kind} confirmed (now {Delivery.objects.get(pk=delivery.pk).state})",
    )


@pytest.fixture
def appraiser(django_user_model):
    return django_user_model.objects.create_user("appraiser.ann", password="pw-ann-12345", is_staff=True)


@any_urn_words  # each callback is matched by the words the service uses
def test_a_staff_worked_order_from_acknowledgement_to_completion(urn_words, demo, appraiser, celery_worker_live):
    txn = order_placed(demo, product="appraisal")
    order = order_of(txn.id, OrderStatus.WITH_STAFF)
    confirmed(order.deliveries.get(kind=DeliveryKind.ACKNOWLEDGEMENT))
    assert Response.objects.get(transaction_id=txn.id).data["partnerStatus"] == "Order received"

    staff.order_take(order_id=order.pk, user=appraiser)
    update = staff.status_update_post(order_id=order.pk, text="Inspection booked for Tuesday", user=appraiser)
    confirmed(update)

    staff.document_attach(order_id=order.pk, upload=SimpleUploadedFile("photos.pdf", PDF), user=appraiser)
    partial = staff.delivery_request(order_id=order.pk, final=False, partner_status="Photos", user=appraiser)
    confirmed(partial)
    assert Response.objects.get(transaction_id=txn.id).data["status"] == "processing"

    staff.document_attach(order_id=order.pk, upload=SimpleUploadedFile("appraisal.pdf", PDF), user=appraiser)
    final = staff.delivery_request(
        order_id=order.pk,
        final=True,
        partner_status="Appraisal complete",
        loan={"appraisal": {"appraisedValue": 812000, "effectiveDate": "2026-11-20", "condition": "C3"}},
        user=appraiser,
    )
    confirmed(final)
    done = order_of(txn.id, OrderStatus.REQUEST_COMPLETED)

    response = Response.objects.get(transaction_id=txn.id)
    assert response.patch_count == 4  # acknowledgement, status update, partial, final: each once
    assert response.data["status"] == "completed" and response.data["loan"]["appraisal"]["appraisedValue"]
    assert sorted(r["name"] for r in response.data["resources"]) == ["appraisal.pdf", "photos.pdf"]
    assert UploadSlot.objects.filter(transaction_id=txn.id, uploaded_at__isnull=False).count() == 2
    assert [d.sequence for d in done.deliveries.order_by("sequence")] == [1, 2, 3, 4]


def test_a_staff_action_during_a_503_is_sent_once_the_service_recovers(demo, appraiser, celery_worker_live):
    txn = order_placed(demo, product="appraisal")
    order = order_of(txn.id, OrderStatus.WITH_STAFF)
    staff.order_take(order_id=order.pk, user=appraiser)

    fault_set(endpoint="response", status=503, retry_after=1)
    update = staff.status_update_post(order_id=order.pk, text="Report on its way", user=appraiser)
    wait_for(
        lambda: Delivery.objects.get(pk=update.pk).last_error,
        timeout=60,
        message="the first attempt to meet the 503",
    )
    assert Delivery.objects.get(pk=update.pk).state == DeliveryState.PENDING  # kept, to be sent later
    faults_clear()

    confirmed(update)
    assert Response.objects.get(transaction_id=txn.id).patch_count == 2  # the acknowledgement and this, once
    assert Delivery.objects.get(pk=update.pk).attempts >= 2
