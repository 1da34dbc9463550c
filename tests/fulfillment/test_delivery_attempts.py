"""Every call tried to send a delivery is kept, as an event's tries are: each slot request, upload and
PATCH, with its status, how long it took, the start of the answer or why none came; and staff read
them on the order's admin page. Against a real local HTTP server standing in for the service."""

import pytest
from django.core.cache import cache
from django.core.files.base import ContentFile
from django.urls import reverse
from django.utils import timezone

from partner.fulfillment.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryKind,
    DeliveryState,
    Order,
    OrderDocument,
    OrderStatus,
    ServiceCall,
)
from partner.fulfillment.runs import order_run
from partner.platform.http import sessions_close
from tests.helpers.servers import TOKEN_PATH, FakeServer, Reply

pytestmark = pytest.mark.django_db

TXN = "txn-tries-1"
PATCH = f"/svc/partner/v2/transactions/{TXN}/response"
SLOTS = f"/svc/partner/v2/transactions/{TXN}/response/resources"


@pytest.fixture
def service(settings):
    server = FakeServer()
    settings.SVC_BASE_URL = f"{server.url}/svc"
    settings.SVC_TOKEN_URL = f"{server.url}{TOKEN_PATH}"
    settings.SVC_TIMEOUT = (2.0, 5.0)
    settings.SVC_UPLOAD_LOCATION_STRICT = False
    server.route("POST", TOKEN_PATH, Reply(200, {"access_token": "tok-tries-1", "token_type": "Bearer"}))
    cache.clear()
    sessions_close()
    yield server
    server.close()
    cache.clear()
    sessions_close()


def result_waiting() -> tuple[Order, Delivery]:
    order = Order.objects.create(
        transaction_id=TXN, status=OrderStatus.IN_PROGRESS, prepared_at=timezone.now(), response={"x": 1}
    )
    return order, Delivery.objects.create(order=order, kind=DeliveryKind.RESULT, state=DeliveryState.PENDING)


def run_again(order: Order):
    Order.objects.filter(pk=order.pk).update(next_attempt_at=None)
    return order_run(order_id=order.pk)


def test_each_try_of_a_patch_is_kept_with_its_status_duration_and_answer(service):
    service.route("PATCH", PATCH, Reply(503, {"detail": "down for a moment"}), Reply(200, {}))
    order, delivery = result_waiting()

    assert order_run(order_id=order.pk).retry is not None  # the 503 goes back to the run
    assert run_again(order).sent == 1

    first, second = DeliveryAttempt.objects.filter(delivery=delivery).order_by("started_at", "id")
    assert (first.call, first.status_code, first.succeeded) == ("response", 503, False)
    assert "down for a moment" in first.answer and first.outcome == "Failed on their side (status 503)"
    assert (second.call, second.status_code, second.succeeded, second.outcome) == ("response", 200, True, "Accepted")
    assert second.answer == ""  # a 2xx answer is data the sender read, not kept
    assert first.order_id == order.pk and first.duration_ms >= 0 and first.started_at <= second.started_at


def test_a_slot_request_an_upload_and_the_patch_are_each_a_try(service):
    location = f"{service.url}/upload/1"
    slot = {"id": "res-1", "location": location, "authorization": "one-time-upload-secret", "mimeType": "x"}
    service.route("POST", SLOTS, Reply(200, [slot]))
    service.route("PUT", "/upload/1", Reply(200, None))
    service.route("PATCH", PATCH, Reply(200, {}))
    order, delivery = result_waiting()
    document = OrderDocument(order=order, delivery=delivery, position=0, name="r.pdf", mime_type="application/pdf")
    document.file.save("r.pdf", ContentFile(b"%PDF-1.4 tries"), save=False)
    document.save()

    assert order_run(order_id=order.pk).sent == 1

    tries = DeliveryAttempt.objects.filter(delivery=delivery).order_by("started_at", "id")
    assert [(t.call, t.status_code, t.succeeded) for t in tries] == [
        ("resources", 200, True),
        ("upload", 200, True),
        ("response", 200, True),
    ]
    assert not any("one-time-upload-secret" in t.answer for t in tries)  # the slot's answer is not kept


def test_a_try_that_got_no_answer_says_why_in_plain_words(service, settings):
    settings.SVC_BASE_URL = "http://127.0.0.1:9/svc"  # nothing listens there; the token endpoint answers
    order, delivery = result_waiting()

    assert order_run(order_id=order.pk).retry is not None

    [tried] = DeliveryAttempt.objects.filter(delivery=delivery)
    assert (tried.call, tried.status_code, tried.succeeded) == ("response", None, False)
    assert tried.answer.startswith("connection refused")
    assert tried.outcome.startswith("No answer: connection refused")


def test_staff_read_the_tries_on_the_order_s_page(service, admin_client):
    service.route("PATCH", PATCH, Reply(422, {"detail": "loan field missing"}))
    order, _ = result_waiting()
    order_run(order_id=order.pk)

    page = admin_client.get(reverse("admin:fulfillment_order_change", args=[order.pk])).content.decode()

    assert "Calls to the service, each try" in page
    assert "Response sent (PATCH)" in page and "Refused (status 422)" in page and "loan field missing" in page


def test_staff_read_a_delivery_s_tries_on_their_order_page(admin_client):
    order = Order.objects.create(transaction_id="txn-tries-staff", staff_worked=True, status=OrderStatus.WITH_STAFF)
    delivery = Delivery.objects.create(
        order=order, kind=DeliveryKind.STATUS_UPDATE, state=DeliveryState.FAILED, partner_status="Booked"
    )
    DeliveryAttempt.objects.create(
        order=order,
        delivery=delivery,
        call=ServiceCall.RESPONSE,
        started_at=timezone.now(),
        duration_ms=41,
        status_code=422,
        answer='{"detail": "partnerStatus too long"}',
    )

    page = admin_client.get(reverse("admin:fulfillment_stafforder_change", args=[order.pk])).content.decode()

    assert "Calls to the service: 1" in page
    assert "Response sent (PATCH), Refused (status 422), 41 ms" in page and "partnerStatus too long" in page
