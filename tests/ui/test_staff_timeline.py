"""What the lender sees of a staff-worked order: the progress answer's timeline, and its documents.

The page's progress poll (GET /ui/transactions/{id}) at each stage of the staff's work, and the
download of a delivered document (GET /ui/transactions/{id}/documents/{document id}), checked like
the poll: the origin against the sandbox on the live server, the order the lender's, the same rate
limit. The orders are made as the pipeline and the staff make them (`tests/helpers/staff_orders.py`).
"""

import itertools
import random
from datetime import datetime, timedelta
from types import SimpleNamespace

import pytest
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from partner.fulfillment.models import DeliveryState, Order, OrderDocument, OrderStatus
from partner.platform.errors import ServiceValidationError
from partner.ui.progress import transaction_progress_get
from tests.helpers.fakes import FakePlatform
from tests.helpers.orders import result_of
from tests.helpers.staff_orders import PDF, PNG, Worker, launched, origin_headers, staff_order, staff_product_name

pytestmark = pytest.mark.django_db

TXN = "txn-timeline-1"
_RUN = random.randrange(256)
_NEXT = itertools.count(1)


@pytest.fixture
def fake(demo, monkeypatch):
    """The order's calls to the service, recorded; installed after `demo` has pulled the products."""
    return FakePlatform().install(monkeypatch)


@pytest.fixture
def product(demo):
    return staff_product_name(demo)


@pytest.fixture
def order(fake, product, tasks_sent):
    return staff_order(fake, transaction_id=TXN, product_name=product)


@pytest.fixture
def origin(demo, product):
    return origin_headers(*launched(demo, product))


def progress(client, origin, transaction_id=TXN) -> dict:
    response = client.get(f"/ui/transactions/{transaction_id}", **origin)
    assert response.status_code == 200, response.content
    return response.json()


def download(client, origin, document_id, transaction_id=TXN, **extra):
    return client.get(f"/ui/transactions/{transaction_id}/documents/{document_id}", **origin, **extra)


def labels(body) -> list[tuple[str, str]]:
    return [(entry["label"], entry["text"]) for entry in body["timeline"]]


# The progress answer, stage by stage ----------------------------------------------------------------


def test_an_acknowledged_order_shows_order_received_and_when_it_is_expected(client, order, origin):
    body = progress(client, origin)

    [ack] = order.deliveries.all()
    assert body["staff_worked"] is True
    assert (body["step"], body["finished"]) == ("in_progress", False)
    assert body["due_at"] == order.due_at.isoformat()
    assert datetime.fromisoformat(body["due_at"]) == order.created_at + timedelta(hours=48)
    assert body["reference_number"] == order.reference_number
    assert body["timeline"] == [
        {
            "id": f"delivery-{ack.pk}",
            "kind": "acknowledgement",
            "label": "Order received",
            "text": "Order received",
            "sent_at": ack.sent_at.isoformat(),
            "documents": [],
            "values": [],
        }
    ]
    assert body["results"] == []


APPRAISAL = {"appraisedValue": 455000, "effectiveDate": "2026-11-27", "condition": "C3", "comments": "Quiet street."}


def values_of(groups) -> list[tuple[str, str]]:
    return [(value["label"], value["text"]) for group in groups for value in group["values"]]


def test_the_appraisal_delivered_is_shown_first_in_the_forms_words(client, order, origin):
    work = Worker(order)
    work.deliver("Value and date", loan={"appraisal": {"appraisedValue": 450000, "effectiveDate": "2026-11-20"}})
    assert work.send() == 1
    waiting = work.deliver(
        "Corrected", loan={"appraisal": {"appraisedValue": 1, "effectiveDate": "2026-11-21"}}
    )  # stored, not sent

    partial = progress(client, origin)

    assert waiting.state == DeliveryState.PENDING
    assert partial["results"] == [
        {
            "field": "appraisal",
            "title": "Appraisal",
            "values": [
                {"name": "appraisal.appraisedValue", "label": "Appraised value", "text": "$450,000"},
                {"name": "appraisal.effectiveDate", "label": "Effective date", "text": "November 20, 2026"},
            ],
        }
    ]
    assert partial["timeline"][-1]["values"] == partial["results"]

    # The final delivery's values replace the partial's; each entry keeps what it carried.
    waiting.delete()
    work.deliver("Appraisal complete", final=True, loan={"appraisal": APPRAISAL})
    assert work.send() == 1
    body = progress(client, origin)

    assert values_of(body["results"]) == [
        ("Appraised value", "$455,000"),
        ("Effective date", "November 27, 2026"),
        ("Condition", "C3: well maintained, normal wear"),
        ("Comments", "Quiet street."),
    ]
    assert values_of(body["timeline"][1]["values"]) == [
        ("Appraised value", "$450,000"),
        ("Effective date", "November 20, 2026"),
    ]
    assert "loan" not in body["timeline"][-1]


def test_a_sent_status_update_is_shown_and_one_still_waiting_is_not(client, order, origin):
    work = Worker(order)
    work.update("Inspection booked for Tuesday")
    assert work.send() == 1
    waiting = work.update("Inspector on the way")  # stored, not sent yet

    body = progress(client, origin)

    assert waiting.state == DeliveryState.PENDING
    assert labels(body) == [("Order received", "Order received"), ("Status update", "Inspection booked for Tuesday")]
    assert "Inspector on the way" not in str(body)
    assert body["partner_status"] == "Inspection booked for Tuesday"  # the latest word, not the acknowledgement's
    sent = [datetime.fromisoformat(entry["sent_at"]) for entry in body["timeline"]]
    assert sent == sorted(sent)
    assert body["finished"] is False


def test_a_delivery_the_service_refused_is_not_shown(client, fake, order, origin):
    work = Worker(order)
    fake.fail("patch_response", ServiceValidationError("refused", status=400, method="PATCH", url="x"))
    delivery = work.update("Never reached the lender")
    work.send()
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.FAILED

    assert labels(progress(client, origin)) == [("Order received", "Order received")]


def test_a_partial_delivery_shows_its_document_and_no_waiting_one(client, order, origin):
    work = Worker(order)
    draft = work.attach("draft.pdf")
    work.deliver("Draft report attached")
    work.send()
    work.attach("photo.png", PNG)  # attached, waiting for the next delivery

    body = progress(client, origin)

    entry = body["timeline"][-1]
    assert (entry["kind"], entry["label"], entry["text"]) == ("partial", "Partial delivery", "Draft report attached")
    draft.refresh_from_db()
    assert entry["documents"] == [
        {
            "id": draft.pk,
            "name": "draft.pdf",
            "mime_type": "application/pdf",
            "size": len(PDF),
            "resource_id": draft.resource_id,
            "download_url": f"/ui/transactions/{TXN}/documents/{draft.pk}",
        }
    ]
    assert "photo.png" not in str(body)
    assert [item["name"] for item in body["documents"]] == ["draft.pdf"]
    assert (body["step"], body["finished"]) == ("in_progress", False)


def test_the_final_delivery_is_polled_until_the_service_confirms_it(client, fake, settings, order, origin):
    from partner.fulfillment.sending.callbacks import order_event_handle

    work = Worker(order)
    work.attach("final.pdf")
    work.deliver("Appraisal complete", final=True)
    work.send()

    body = progress(client, origin)
    entry = body["timeline"][-1]
    assert (entry["label"], entry["text"], [d["name"] for d in entry["documents"]]) == (
        "Final delivery",
        "Appraisal complete",
        ["final.pdf"],
    )
    assert (body["step"], body["finished"]) == ("delivered", False)  # awaiting the service's confirmation
    assert body["partner_status"] == "Appraisal complete"

    # The service processes our responses in order: the acknowledgement's callback, then the final's.
    for event_id in ("ev-0", "ev-1"):
        fake.events[(TXN, event_id)] = {"id": event_id, "type": "urn:svc:platform:transaction:response:processed"}
        order_event_handle(resource_ref=f"{settings.SVC_BASE_URL}/partner/v2/transactions/{TXN}/events/{event_id}")
    body = progress(client, origin)
    assert (body["step"], body["finished"]) == ("completed", True)
    assert [label for label, _ in labels(body)] == ["Order received", "Final delivery"]


def test_a_declined_order_ends_with_the_reason(client, order, origin):
    work = Worker(order)
    work.update("Inspection booked")
    work.decline("The property is outside our area")
    work.send()

    body = progress(client, origin)

    assert (body["status"], body["step"], body["finished"]) == (OrderStatus.DECLINED, "declined", True)
    assert body["reason"] == "The property is outside our area"
    assert body["timeline"][-1]["kind"] == "decline"
    assert labels(body)[-1] == ("Declined", "Order declined: The property is outside our area")
    assert body["due_at"] == order.due_at.isoformat()


def test_the_progress_read_costs_the_same_queries_however_long_the_timeline(demo, fake, product, tasks_sent):
    from partner.catalog.models import PartnerAccount

    account = PartnerAccount.objects.get(username="lender.demo")
    short = staff_order(fake, transaction_id="txn-short", product_name=product)
    long = staff_order(fake, transaction_id="txn-long", product_name=product)
    work = Worker(long)
    for number in range(3):
        work.update(f"Update {number}")
        work.attach(f"part-{number}a.pdf")
        work.attach(f"part-{number}b.png", PNG)
        work.deliver(f"Part {number}")
    work.send()

    def read(transaction_id):
        with CaptureQueriesContext(connection) as queries:
            body = transaction_progress_get(
                transaction_id=transaction_id,
                product_name=product,
                account_id=account.pk,
                company_id=account.company_id,
            )
        return body, len(queries)

    short_body, short_queries = read(short.transaction_id)
    long_body, long_queries = read(long.transaction_id)
    assert len(short_body["timeline"]) == 1
    assert len(long_body["timeline"]) == 7 and sum(len(e["documents"]) for e in long_body["timeline"]) == 6
    assert long_queries == short_queries


def test_the_progress_read_stays_within_its_query_budget(
    demo, fake, product, tasks_sent, django_assert_max_num_queries
):
    from partner.catalog.models import PartnerAccount

    colleague_order = staff_order(fake, transaction_id=TXN, product_name=product)
    work = Worker(colleague_order)
    for number in range(4):
        work.attach(f"part-{number}.pdf")
        work.deliver(f"Part {number}")
    work.send()
    account = PartnerAccount.objects.get(username="lender.demo")
    with django_assert_max_num_queries(4):
        body = transaction_progress_get(
            transaction_id=TXN, product_name=product, account_id=None, company_id=account.company_id
        )  # a colleague at the same lender: the order's account is loaded too
    assert len(body["timeline"]) == 5


# Downloads ------------------------------------------------------------------------------------------


@pytest.fixture
def delivered(order):
    """The order with a partial delivery sent (draft.pdf) and a document waiting (photo.png)."""
    work = Worker(order)
    draft = work.attach("draft.pdf")
    work.deliver("Draft report attached")
    work.send()
    waiting = work.attach("photo.png", PNG)
    return SimpleNamespace(order=order, work=work, draft=draft, waiting=waiting)


def test_a_delivered_document_downloads_as_an_attachment(client, delivered, origin):
    response = download(client, origin, delivered.draft.pk)

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PDF
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="draft.pdf"'
    assert response["Content-Length"] == str(len(PDF))
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "no-store" in response["Cache-Control"]
    assert "sandbox" in response["Content-Security-Policy"]


def test_an_automated_orders_report_downloads_once_delivered(demo, client, settings):
    origin = origin_headers(*launched(demo, "address-verification"))
    order = Order.objects.create(
        transaction_id="txn-automated-1", product_name="address-verification", status=OrderStatus.IN_PROGRESS
    )
    report = OrderDocument(
        order=order, delivery=result_of(order), position=0, name="address-report.pdf", mime_type="application/pdf"
    )
    report.size = len(PDF)
    report.file.save("address-report.pdf", ContentFile(PDF), save=False)
    report.uploaded_at = timezone.now()
    report.save()

    # Uploaded, but the response has not reached the service: not the lender's yet.
    assert download(client, origin, report.pk, "txn-automated-1").status_code == 404
    assert progress(client, origin, "txn-automated-1")["timeline"] == []

    Order.objects.filter(pk=order.pk).update(status=OrderStatus.REQUEST_COMPLETED, delivered_at=timezone.now())
    response = download(client, origin, report.pk, "txn-automated-1")
    assert response.status_code == 200 and b"".join(response.streaming_content) == PDF
    body = progress(client, origin, "txn-automated-1")
    assert body["staff_worked"] is False and body["due_at"] is None
    [entry] = body["timeline"]
    assert (entry["label"], [d["name"] for d in entry["documents"]]) == ("Final delivery", ["address-report.pdf"])
    assert [item["name"] for item in body["documents"]] == ["address-report.pdf"]  # as before


def test_a_waiting_document_is_not_found(client, delivered, origin):
    response = download(client, origin, delivered.waiting.pk)
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "document_unknown"
    assert PNG not in response.content


def test_a_document_of_a_delivery_not_sent_yet_is_not_found(client, delivered, origin):
    delivered.work.deliver("Photos")  # takes photo.png; stored, not sent
    delivered.waiting.refresh_from_db()
    assert delivered.waiting.delivery.state == DeliveryState.PENDING
    assert download(client, origin, delivered.waiting.pk).status_code == 404


def test_another_lenders_document_is_not_found(client, delivered, origin):
    from partner.catalog.services import partner_account_set

    other, _ = partner_account_set(username="lender.other", password="someone-elses-password-3", company="OTHER01")
    Order.objects.filter(pk=delivered.order.pk).update(ordered_by=other)

    response = download(client, origin, delivered.draft.pk)
    assert response.status_code == 404
    assert PDF not in response.content
    assert client.get(f"/ui/transactions/{TXN}", **origin).status_code == 404


def test_a_document_of_another_transaction_is_not_found(client, fake, product, delivered, origin):
    staff_order(fake, transaction_id="txn-timeline-2", product_name=product)
    # The lender's other order, asked for its neighbour's document.
    assert download(client, origin, delivered.draft.pk, "txn-timeline-2").status_code == 404
    assert download(client, origin, delivered.draft.pk, "txn-unknown").status_code == 404


@pytest.mark.parametrize("document_id", ["abc", "1.0", "-1", "9" * 30])
def test_a_malformed_document_id_is_not_found(client, delivered, origin, document_id):
    response = download(client, origin, document_id)
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "document_unknown"


def test_a_document_whose_file_is_gone_is_listed_without_a_download(client, delivered, origin):
    OrderDocument.objects.filter(pk=delivered.draft.pk).update(file="")  # the retention purge

    [document] = progress(client, origin)["timeline"][-1]["documents"]
    assert document["name"] == "draft.pdf" and document["download_url"] is None
    assert download(client, origin, delivered.draft.pk).status_code == 404


def test_the_download_checks_the_origin_as_the_poll_does(demo, client, delivered, product):
    document = delivered.draft.pk
    # No origin: refused before the service is asked.
    response = client.get(f"/ui/transactions/{TXN}/documents/{document}")
    assert response.status_code == 400 and response.json()["errors"][0]["code"] == "origin_missing"
    # A token the service does not know.
    origin_id, _ = launched(demo, product)
    response = download(client, origin_headers(origin_id, "not-the-token"), document)
    assert response.status_code == 401 and PDF not in response.content
    # A lender whose partner credentials are refused.
    response = download(client, origin_headers(*launched(demo, product, "lender.wrong")), document)
    assert response.status_code == 401 and "status" in response.json()
    # A token in the address is not taken (it would end in access logs): only the poll's headers.
    origin_id, token = launched(demo, product)
    response = client.get(
        f"/ui/transactions/{TXN}/documents/{document}", {"partnerAccessToken": token}, HTTP_X_ORIGIN_ID=origin_id
    )
    assert response.status_code == 400 and PDF not in response.content


def test_downloads_and_polls_share_one_rate_limit(client, delivered, origin, settings, ratelimit_clock):
    settings.RATELIMIT_ORIGIN = "3/m"
    address = {"REMOTE_ADDR": f"10.{_RUN}.{next(_NEXT)}.9"}

    assert client.get(f"/ui/transactions/{TXN}", **origin, **address).status_code == 200
    assert download(client, origin, delivered.draft.pk, **address).status_code == 200
    assert download(client, origin, delivered.draft.pk, **address).status_code == 200
    limited = download(client, origin, delivered.draft.pk, **address)
    assert limited.status_code == 429 and 1 <= int(limited["Retry-After"]) <= 60
    assert limited.json()["errors"][0]["code"] == "rate_limited"
    assert client.get(f"/ui/transactions/{TXN}", **origin, **address).status_code == 429
