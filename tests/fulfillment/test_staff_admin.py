"""The staff's work queue and order page in the admin, through Django's test client.

Orders are made as in `test_staff_work.py`: a staff-worked product, a transaction on the fake
service, the pipeline's acknowledgement. Tasks are recorded (`tasks_sent`), never published.
"""

import logging
import re
import uuid
from datetime import UTC, datetime, timedelta
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.forms.renderers import DjangoTemplates
from django.template import defaultfilters, engines
from django.test import Client
from django.test.html import parse_html
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import DateFormat
from django.utils.timezone import template_localtime

from partner.catalog.product_cache import CATALOG_CACHE_KEYS
from partner.catalog.services import partner_account_set
from partner.core import templating
from partner.fulfillment.models import (
    Delivery,
    DeliveryAttempt,
    DeliveryKind,
    DeliveryState,
    Order,
    OrderDocument,
    ServiceCall,
)
from partner.fulfillment.orders.services import order_open
from partner.fulfillment.staff import services as staff_services
from partner.fulfillment.staff.forms import DeliveryForm
from partner.fulfillment.staff.selectors import order_history
from partner.platform import formats
from partner.platform.errors import ServiceValidationError
from tests.helpers.orders import deliveries_sent, order_ran
from tests.helpers.outages import database_away
from tests.helpers.products import LENDER_CREDENTIALS, product_create

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "admin:fulfillment_stafforder_changelist"
SEND_TASK = "fulfillment.order_run"
PDF = b"%PDF-1.7\n% an appraisal report\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
LOAN = {
    "loanNumber": "LN-2026-0042",
    "property": {"streetAddress": "500 Howard Street", "city": "San Francisco", "postalCode": "94105"},
}
FIELDS = {
    "data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "response": {"fields": ["property", "appraisal"]}}]}
}


def page(order_id: int) -> str:
    return reverse("admin:fulfillment_stafforder_change", args=[order_id])


def action(name: str, pk: int) -> str:
    return reverse(f"admin:fulfillment_stafforder_{name}", args=[pk])


def text(response) -> str:
    return response.content.decode()


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


@pytest.fixture
def make_order(fake_platform, tasks_sent, settings):
    """A staff-worked order acknowledged by the pipeline (its product made on first use)."""
    settings.PUBLIC_BASE_URL = "https://partner.example"
    products = {}

    def make(transaction_id, *, product="appraisal", loan_number="LN-2026-0042", entitlements=FIELDS):
        if product not in products:
            raw = {"name": product, "entitlements": entitlements}
            products[product] = product_create(name=product, fulfiller="staff_worked", turnaround_hours=48, raw=raw)
        request = {
            "type": "NEW_REQUEST",
            "loan": {**LOAN, "loanNumber": loan_number},
            "credentials": LENDER_CREDENTIALS,
            "options": {"comments": "Gate code 1234", "rush": True},
        }
        fake_platform.transaction_add(transaction_id, request=request, product_name=product)
        order, _, _ = order_open(transaction_id=transaction_id, product_name=product)
        order_ran(order_id=order.pk)
        order.refresh_from_db()
        return order

    return make


@pytest.fixture
def order(make_order):
    return make_order("txn-admin-1")


def user_client(username: str, *, superuser=False, permissions=()) -> tuple:
    users = get_user_model().objects
    if superuser:
        user = users.create_superuser(username, f"{username}@partner.example", "pw-12345-abc")
    else:
        user = users.create_user(username, f"{username}@partner.example", "pw-12345-abc", is_staff=True)
        user.user_permissions.set(Permission.objects.filter(codename__in=permissions))
    client = Client()
    client.force_login(user)
    return user, client


@pytest.fixture
def other():
    """Another staff member who works orders."""
    return user_client("appraiser.bob", superuser=True)


@pytest.fixture
def viewer():
    """Staff who may look at orders and not act on them."""
    return user_client("viewer", permissions=["view_order"])


@pytest.fixture
def taken(staff, order):
    """The order, taken by the `staff` superuser."""
    staff.post(action("take", order.pk))
    order.refresh_from_db()
    assert order.assigned_to.get_username() == "staff"
    return order


# The queue ---------------------------------------------------------------------------------------


def test_the_queue_lists_only_staff_worked_orders_soonest_due_first(staff, make_order):
    later, sooner = make_order("txn-later"), make_order("txn-sooner", loan_number="LN-2")
    Order.objects.filter(pk=sooner.pk).update(due_at=timezone.now() - timedelta(hours=2))
    Order.objects.create(transaction_id="txn-automated", reference_number="AUTO-REF-1")
    listing = text(staff.get(reverse(QUEUE)))
    assert later.reference_number in listing and sooner.reference_number in listing
    assert "AUTO-REF-1" not in listing
    assert listing.index(sooner.reference_number) < listing.index(later.reference_number)
    assert "DEMO01" in listing  # the lender company
    assert "overdue: 2\xa0hours" in listing
    assert "Orders to work" in text(staff.get(reverse("admin:index")))


def test_the_queue_filters_and_search(staff, make_order, other):
    mine = make_order("txn-mine", loan_number="LN-MINE-1")
    late = make_order("txn-late", loan_number="LN-LATE-2")
    elsewhere = make_order("txn-inspection", product="inspection", loan_number="LN-INSP-3")
    staff.post(action("take", mine.pk))
    Order.objects.filter(pk=late.pk).update(due_at=timezone.now() - timedelta(minutes=5))
    company_account = late.ordered_by
    account, _ = partner_account_set(username="lender.other", password="pw-other-123", company="OTHER CO")
    Order.objects.filter(pk=elsewhere.pk).update(ordered_by=account)

    def listed(**params) -> set[str]:
        found = text(staff.get(reverse(QUEUE), params))
        return {t.transaction_id for t in (mine, late, elsewhere) if t.reference_number in found}

    assert listed() == {"txn-mine", "txn-late", "txn-inspection"}
    assert listed(assigned="me") == {"txn-mine"}
    assert listed(assigned="nobody") == {"txn-late", "txn-inspection"}
    assert listed(overdue="yes") == {"txn-late"}
    assert listed(product_name="inspection") == {"txn-inspection"}
    assert listed(company=str(account.company_id)) == {"txn-inspection"}
    assert listed(company=str(company_account.company_id)) == {"txn-mine", "txn-late"}
    assert listed(q="LN-LATE-2") == {"txn-late"}
    assert listed(q=mine.reference_number) == {"txn-mine"}
    # Another staff member's "me" is someone else.
    assert mine.reference_number not in text(other[1].get(reverse(QUEUE), {"assigned": "me"}))


def test_the_queue_shows_open_orders_unless_asked_and_names_states_in_staff_words(staff, make_order):
    working, done = make_order("txn-open"), make_order("txn-done", loan_number="LN-DONE")
    Order.objects.filter(pk=done.pk).update(status="REQUEST_COMPLETED")
    listing = text(staff.get(reverse(QUEUE)))
    assert working.reference_number in listing and done.reference_number not in listing
    assert "Open: with staff" in listing
    for api_word in ("Validation requested", "Request completed"):
        assert api_word not in listing
    completed = text(staff.get(reverse(QUEUE), {"state": "completed"}))
    assert done.reference_number in completed and working.reference_number not in completed
    every = text(staff.get(reverse(QUEUE), {"state": "all"}))
    assert done.reference_number in every and working.reference_number in every


def test_the_index_counts_what_needs_attention_under_the_partners_name(staff, make_order, settings):
    _waiting, late, taken_one = make_order("txn-w1"), make_order("txn-w2"), make_order("txn-w3")
    Order.objects.filter(pk=late.pk).update(due_at=timezone.now() - timedelta(hours=1))
    staff.post(action("take", taken_one.pk))
    index = text(staff.get(reverse("admin:index")))
    assert "3 open" in index and "2 waiting</a>" in index and "1 overdue</a>" in index
    assert settings.PARTNER_NAME in index and "Django administration" not in index


# Who works the order -------------------------------------------------------------------------------


def test_take_take_over_with_a_confirmation_and_release(staff, order, other):
    bob, bobs_client = other
    staff.post(action("take", order.pk))
    assert "Take over…" in text(bobs_client.get(page(order.pk)))

    refused = bobs_client.post(action("take", order.pk), follow=True)
    assert "Staff works this order (since" in text(refused)  # the admin capitalises messages
    confirmation = bobs_client.get(action("take_over", order.pk))
    assert "<strong>staff</strong> works this order since" in text(confirmation)
    order.refresh_from_db()
    assert order.assigned_to.get_username() == "staff"  # asking changed nothing

    done = bobs_client.post(action("take_over", order.pk), follow=True)
    assert "You took the order over from staff." in text(done)
    order.refresh_from_db()
    assert order.assigned_to == bob
    assert order.steps.filter(name="taken_over", actor="appraiser.bob", detail="from staff").exists()

    assert "You do not work this order." in text(staff.post(action("release", order.pk), follow=True))
    assert "You released the order" in text(bobs_client.post(action("release", order.pk), follow=True))
    order.refresh_from_db()
    assert order.assigned_to is None


def test_the_forms_appear_only_to_who_works_the_order(staff, order):
    before = text(staff.get(page(order.pk)))
    assert "Take the order to work it" in before and 'name="status-partner_status"' not in before
    staff.post(action("take", order.pk))
    after = text(staff.get(page(order.pk)))
    for name in ("status-partner_status", "upload-files", "deliver-kind", "decline-reason"):
        assert f'name="{name}"' in after


# The page ---------------------------------------------------------------------------------------


def test_the_page_shows_the_request_and_what_happened(staff, taken):
    shown = text(staff.get(page(taken.pk)))
    assert "500 Howard Street" in shown and "LN-2026-0042" in shown
    assert "Gate code 1234" in shown and "<dt>Rush</dt>" in shown
    # The loan in the staff's words (the labels the lender's panel uses), never the API's names.
    for label in ("<dt>Loan number</dt>", "<dt>Subject property</dt>", "<dt>Street address</dt>", "<dt>ZIP code</dt>"):
        assert label in shown
    request = shown.split('id="order-request"')[1]
    assert request.index("Street address") < request.index("City") < request.index("ZIP code")  # as one reads it
    for api_word in ("<dt>streetAddress</dt>", "<dt>loanNumber</dt>", "partnerStatus", "response data entitlement"):
        assert api_word not in shown
    # No API words in the request or the history: request type, media type, addresses, response versions.
    request_and_history = shown.split('id="order-request"')[1].split("</table>")[0]  # the request, then the history
    for api_word in ("NEW_REQUEST", "application/vnd", "http://", "https://", "response version", taken.transaction_id):
        assert api_word not in request_and_history, api_word
    assert LENDER_CREDENTIALS["password"] not in shown  # never kept
    for what in ("Order arrived from the platform", "Acknowledgement", "Order received", "Taken"):
        assert what in shown
    assert '<td class="staff-who" title="staff">staff</td>' in shown  # who took it
    assert '<td class="staff-who" title="system">system</td>' in shown  # one line, no "syste m" (the browser test)


def test_a_failed_delivery_shows_its_reason_and_can_be_sent_again(staff, taken, fake_platform, tasks_sent):
    delivery = staff_status(staff, taken, "Inspection booked")
    fake_platform.fail(
        "patch_response", ServiceValidationError("refused: bad status", status=400, method="PATCH", url="x")
    )
    deliveries_sent(order_id=taken.pk)
    shown = text(staff.get(page(taken.pk)))
    assert "refused: bad status" in shown and "Send again" in shown

    again = staff.post(action("delivery_retry", delivery.pk), follow=True)
    assert "The status update is sent again." in text(again)
    delivery.refresh_from_db()
    assert delivery.state == DeliveryState.PENDING


def test_an_order_that_is_not_staff_worked_has_no_page(staff):
    automated = Order.objects.create(transaction_id="txn-automated")
    response = staff.get(page(automated.pk))
    assert response.status_code == 302 and response.url == reverse("admin:index")


# Status updates ---------------------------------------------------------------------------------


def staff_status(client, order, text_) -> Delivery:
    response = client.post(action("status_update", order.pk), {"status-partner_status": text_})
    assert response.status_code == 302 and response.url == page(order.pk)
    return order.deliveries.get(kind=DeliveryKind.STATUS_UPDATE, partner_status=text_)


def test_a_status_update_is_stored_for_a_worker_to_send(staff, taken, tasks_sent):
    delivery = staff_status(staff, taken, "Inspection booked for Tuesday")
    assert delivery.state == DeliveryState.PENDING and delivery.created_by == "staff"
    assert (SEND_TASK, {"order_id": taken.pk}) in tasks_sent
    assert "Status update stored" in text(staff.get(page(taken.pk)))


def test_an_empty_status_update_is_refused_next_to_its_field(staff, taken):
    refused = staff.post(action("status_update", taken.pk), {"status-partner_status": "   "})
    assert refused.status_code == 200
    assert "The status update is empty." in text(refused) and 'class="errorlist' in text(refused)
    assert taken.deliveries.count() == 1  # the acknowledgement only


def test_a_form_met_by_our_database_restarting_is_503_and_can_be_sent_again(staff, taken, monkeypatch):
    """A drill that restarted PostgreSQL saw the staff's forms answer 500: an outage of ours is a
    moment's unavailability (503, Retry-After, a page that says to look before sending again), and
    the same form, sent again once the database is back, acts. A bug is still a 500."""
    form = {"status-partner_status": "Inspection booked", "status-once": uuid.uuid4().hex}
    staff.raise_request_exception = False
    with monkeypatch.context() as patched:
        patched.setattr(staff_services, "status_update_post", database_away)
        away = staff.post(action("status_update", taken.pk), form)
    assert away.status_code == 503 and away["Retry-After"] == "5"
    assert "Unavailable for a moment" in text(away) and "open the page again before you send it" in text(away)
    assert not taken.deliveries.filter(kind=DeliveryKind.STATUS_UPDATE).exists()

    again = staff.post(action("status_update", taken.pk), form)
    assert again.status_code == 302 and taken.deliveries.filter(kind=DeliveryKind.STATUS_UPDATE).count() == 1

    def bug(**kwargs):
        raise KeyError("partner_status")

    monkeypatch.setattr(staff_services, "status_update_post", bug)
    form["status-once"] = uuid.uuid4().hex
    assert staff.post(action("status_update", taken.pk), form).status_code == 500


def test_the_same_form_sent_twice_acts_once(staff, taken):
    form = {"status-partner_status": "Inspection booked", "status-once": uuid.uuid4().hex}
    staff.post(action("status_update", taken.pk), form)
    twice = staff.post(action("status_update", taken.pk), form, follow=True)
    assert "the second submission was ignored" in text(twice)
    assert taken.deliveries.filter(kind=DeliveryKind.STATUS_UPDATE).count() == 1


def test_a_form_whose_action_broke_acts_when_sent_again(staff, taken, monkeypatch):
    """The database away while a status update was stored (a restart): the page errs, nothing was
    stored, and the same form sent again (the browser's retry) is stored, not ignored as a second
    submission (a fault schedule lost a staff member's final delivery so)."""
    from django.db import OperationalError

    from partner.fulfillment.staff import services

    post, broke = services.status_update_post, {}

    def away_once(**kwargs):
        if not broke:
            broke["once"] = True
            raise OperationalError("the database is away")
        return post(**kwargs)

    monkeypatch.setattr(services, "status_update_post", away_once)
    form = {"status-partner_status": "Inspection booked", "status-once": uuid.uuid4().hex}
    with pytest.raises(OperationalError):
        staff.post(action("status_update", taken.pk), form)
    assert not taken.deliveries.filter(kind=DeliveryKind.STATUS_UPDATE).exists()

    again = staff.post(action("status_update", taken.pk), form, follow=True)
    assert "the second submission was ignored" not in text(again)
    assert taken.deliveries.filter(kind=DeliveryKind.STATUS_UPDATE).count() == 1


# Documents ---------------------------------------------------------------------------------------


def test_documents_are_uploaded_removed_and_replaced(staff, taken):
    response = staff.post(
        action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF), upload("front.png", PNG)]}
    )
    assert response.status_code == 302
    report, photo = taken.attachments.order_by("position")
    assert [(d.name, d.mime_type) for d in (report, photo)] == [
        ("report.pdf", "application/pdf"),
        ("front.png", "image/png"),
    ]
    assert report.read() == PDF and report.added_by == "staff"
    assert "report.pdf" in text(staff.get(page(taken.pk)))

    assert "Removed front.png." in text(staff.post(action("document_remove", photo.pk), follow=True))
    assert not OrderDocument.objects.filter(pk=photo.pk).exists()

    fixed = PDF + b"% corrected\n"
    replaced = staff.post(action("document_replace", report.pk), {f"replace-{report.pk}-file": upload("v2.pdf", fixed)})
    assert replaced.status_code == 302
    [document] = taken.attachments.all()
    assert (document.name, document.read()) == ("v2.pdf", fixed)
    assert not OrderDocument.objects.filter(pk=report.pk).exists()


def test_a_file_of_another_kind_or_too_large_is_refused_with_a_clear_error(staff, taken, settings):
    refused = staff.post(action("upload", taken.pk), {"upload-files": [upload("invoice.pdf", b"MZ\x90\x00 not a pdf")]})
    assert refused.status_code == 200
    assert "invoice.pdf is not a PDF, PNG or JPEG document" in text(refused)

    settings.DOCUMENT_MAX_BYTES = 10
    too_large = staff.post(action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF)]})
    assert "report.pdf is 31\xa0bytes; at most 10\xa0bytes may be attached." in text(too_large)
    assert not taken.attachments.exists()


# Deliveries --------------------------------------------------------------------------------------


def deliver(client, order, **fields):
    return client.post(action("deliver", order.pk), {f"deliver-{name}": value for name, value in fields.items()})


APPRAISAL = {
    "appraisal__appraisedValue": "812000.50",
    "appraisal__effectiveDate": "2026-11-20",
    "appraisal__condition": "C3",
    "appraisal__comments": "Good comparables within a mile.",
}


def loan_inputs(**values) -> dict:
    return {f"loan__{name}": value for name, value in values.items()}


def test_a_delivery_form_is_typed_inputs_with_labels_never_a_json_box(staff, taken):
    form = text(staff.get(page(taken.pk)))
    # The subject property from the seed, filled with what the lender sent; enumerations as choices.
    assert 'name="deliver-loan__property__streetAddress"' in form and 'value="500 Howard Street"' in form
    assert '<label for="id_deliver-loan__property__postalCode">ZIP code:</label>' in form
    assert '<select name="deliver-loan__property__propertyUsageType"' in form
    assert '<option value="PrimaryResidence">Primary residence</option>' in form
    # The appraisal from the product's response form: money, a date, a choice, text.
    assert 'name="deliver-loan__appraisal__appraisedValue" step="0.01"' in form
    assert 'type="date" name="deliver-loan__appraisal__effectiveDate"' in form
    assert '<option value="C3">C3: well maintained, normal wear</option>' in form
    assert "<legend>Appraisal</legend>" in form and "Appraised value" in form
    # In the form's order (x-order), whatever order the database keeps the JSON object's keys in.
    names = [
        f'name="deliver-loan__appraisal__{key}"' for key in ("appraisedValue", "effectiveDate", "condition", "comments")
    ]
    assert [form.index(name) for name in names] == sorted(form.index(name) for name in names)
    delivery_form = form.split('id="delivery"')[1].split("</form>")[0]
    assert "JSON" not in delivery_form and delivery_form.count("<textarea") == 1  # the appraisal's comments
    assert "deliver-result_status" not in form


def test_a_final_delivery_asks_first_showing_what_will_be_sent(staff, taken, tasks_sent):
    staff.post(action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF)]})
    tasks_sent.clear()
    fields = {
        "kind": "final",
        "partner_status": "Appraisal complete",
        **loan_inputs(property__streetAddress="500 Howard Street", property__city="South San Francisco", **APPRAISAL),
    }
    asked = deliver(staff, taken, **fields)
    shown = text(asked)
    assert asked.status_code == 200 and "This cannot be undone" in shown
    for what in ("Appraisal complete", "report.pdf", "$812,000.50", "November 20, 2026", "C3: well maintained"):
        assert what in shown
    assert not taken.deliveries.filter(kind=DeliveryKind.FINAL).exists() and tasks_sent == []

    back = staff.post(action("deliver", taken.pk), {**prefixed(fields), "change": "1"})
    assert 'value="812000.50"' in text(back) and not taken.deliveries.filter(kind=DeliveryKind.FINAL).exists()

    response = staff.post(action("deliver", taken.pk), {**prefixed(fields), "confirmed": "1"})
    assert response.status_code == 302
    delivery = taken.deliveries.get(kind=DeliveryKind.FINAL)
    assert delivery.state == DeliveryState.PENDING and delivery.partner_status == "Appraisal complete"
    assert delivery.loan == {
        "property": {"city": "South San Francisco"},  # the street and anything else left as sent are not
        "appraisal": {
            "appraisedValue": 812000.5,
            "effectiveDate": "2026-11-20",
            "condition": "C3",
            "comments": "Good comparables within a mile.",
        },
    }
    assert [d.name for d in delivery.attachments.all()] == ["report.pdf"]
    assert tasks_sent == [(SEND_TASK, {"order_id": taken.pk})]


def test_an_empty_final_delivery_is_warned_about_before_it_is_sent(staff, taken, tasks_sent):
    empty = text(deliver(staff, taken, kind="final", partner_status=""))
    assert 'id="confirm-empty"' in empty and "Nothing is in this final delivery" in empty
    assert not taken.deliveries.filter(kind=DeliveryKind.FINAL).exists()

    with_status = text(deliver(staff, taken, kind="final", partner_status="No access: see the note"))
    assert "This cannot be undone" in with_status and 'id="confirm-empty"' not in with_status


def test_a_partial_delivery_is_stored_at_once(staff, taken):
    response = deliver(staff, taken, kind="partial", partner_status="Inspection done")
    assert response.status_code == 302
    assert taken.deliveries.get(kind=DeliveryKind.PARTIAL).partner_status == "Inspection done"


# What a page and a delivery cost: the queries of each, so that they cannot grow again unseen
# (docs/performance.md, "What a staff delivery costs"). The product comes from the catalog in the
# shared cache, read once; the lender's company and who works the order with the order.


def _catalog_warm(client, order) -> None:
    """The catalog stored in the shared cache, as it is between changes (a product saved by the test's
    setup leaves a marker that sends readers to the database for a few seconds)."""
    cache.delete_many(CATALOG_CACHE_KEYS)
    client.get(page(order.pk))


@pytest.fixture
def order_staff():
    """A staff member of the `Order staff` group (not a superuser: the bench's login), signed in."""
    from partner.core.staff_accounts import staff_account_set

    user, _ = staff_account_set(username="clerk", password="Clerk-password-2026!")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("who", ["superuser", "order staff"])
def test_the_order_page_takes_six_queries_however_many_deliveries_it_shows(
    who, staff, order_staff, taken, fake_platform, django_assert_max_num_queries
):
    staff.post(action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF)]})
    for number in range(3):
        staff_status(staff, taken, f"Inspection booked ({number})")
        deliveries_sent(order_id=taken.pk)  # each with its tries
    staff.post(action("upload", taken.pk), {"upload-files": [upload("photo.png", PNG)]})
    client = staff if who == "superuser" else order_staff
    _catalog_warm(client, taken)
    # The user (the session and order staff's permissions are read from the cache), the order (with its
    # lender's company and who works it), the steps, the deliveries with their tries, and every document
    # of the order (the waiting ones and each delivery's; whether a final delivery was made is told by
    # the deliveries read). No query joins the order to sort its steps, tries or documents.
    with django_assert_max_num_queries(6) as queries:
        shown = text(client.get(page(taken.pk)))
    assert not [query["sql"] for query in queries.captured_queries if 'JOIN "fulfillment_order"' in query["sql"]]
    assert "Inspection booked (2)" in shown and "photo.png" in shown
    assert "Lender company</dt><dd>" in shown and '<span id="assigned-to">staff</span>' in shown
    assert ('id="delivery"' in shown) == (who == "superuser")  # the forms to who works the order


def test_a_staff_session_the_cache_lost_is_read_from_the_database(staff, taken):
    cache.clear()  # a restarted cache: the sessions are the database's, the cache only in front of it
    shown = staff.get(page(taken.pk))
    assert shown.status_code == 200 and '<span id="assigned-to">staff</span>' in text(shown)


@pytest.mark.parametrize("who", ["superuser", "order staff"])
def test_a_delivery_takes_ten_statements_with_no_read_of_the_product(
    who, staff, order_staff, order, django_assert_max_num_queries
):
    client = staff if who == "superuser" else order_staff
    client.post(action("take", order.pk))
    client.post(action("upload", order.pk), {"upload-files": [upload("report.pdf", PDF)]})
    _catalog_warm(client, order)
    # The user (the session and order staff's permissions are read from the cache), the order; in one
    # transaction (BEGIN, COMMIT): the order locked, whether a final delivery was made, the waiting
    # documents, the delivery, its documents and its step written. The message's count of documents is
    # the service's, not a query.
    with django_assert_max_num_queries(10):
        response = deliver(client, order, kind="partial", partner_status="Report attached", **loan_inputs(**APPRAISAL))
    assert response.status_code == 302
    delivery = order.deliveries.get(kind=DeliveryKind.PARTIAL)
    assert delivery.loan["appraisal"]["condition"] == "C3" and delivery.attachments.count() == 1


def test_the_order_page_draws_its_inputs_with_jinja2_as_django_s_templates_would(staff, taken):
    """The staff's forms draw inputs, labels and error lists with Django's Jinja2 form templates (half
    the CPU): the page draws none through the template language, and each part is the same HTML as
    Django's own form templates draw (whitespace aside), a refused form's errors included."""
    _catalog_warm(staff, taken)
    shown = staff.get(page(taken.pk))
    assert not [template.name for template in shown.templates if template.name.startswith("django/forms/")]
    assert 'name="deliver-loan__appraisal__appraisedValue"' in text(shown)
    refused = prefixed({"kind": "final", **loan_inputs(appraisal__appraisedValue="812,000", appraisal__condition="C3")})
    for form in (DeliveryForm.for_order(taken), DeliveryForm.for_order(taken, refused)):
        assert form.renderer.get_template("django/forms/widgets/input.html").backend is engines["jinja2"]  # one env
        form.is_bound and form.is_valid()

        def parts(form=form):
            groups = [field for group in form.loan_groups() for field in group.fields]
            every = [form["once"], form["kind"], form["partner_status"], *groups, *form.result_fields()]
            return [parse_html(str(part)) for field in every for part in (field, field.label_tag(), field.errors)]

        drawn = parts()
        form.renderer = DjangoTemplates()
        assert drawn == parts() and len(drawn) == 3 * 14  # the key, the kind, the status, 11 loan inputs


def test_the_order_page_s_body_is_drawn_with_jinja2_in_the_admin_s_frame(staff, taken):
    """The body (the request, the timeline, the documents, the forms) is one Jinja2 template: the template
    language draws only the admin's frame around it (no template per value of the request, per row of a
    form), and what staff read is the same."""
    staff.post(action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF)]})
    staff_status(staff, taken, "Inspection booked")
    deliveries_sent(order_id=taken.pk)
    shown = staff.get(page(taken.pk))
    drawn = {template.name for template in shown.templates}
    assert "admin/base.html" in drawn and "admin/nav_sidebar.html" in drawn  # the admin's frame
    assert [name for name in drawn if name.startswith("admin/fulfillment/")] == [
        "admin/fulfillment/stafforder/order.html"
    ]
    body = text(shown)
    assert "<dt>Street address</dt>" in body and "Gate code 1234" in body  # the request, in the staff's words
    assert "Inspection booked" in body and "report.pdf" in body and 'name="csrfmiddlewaretoken"' in body
    assert f'action="{action("deliver", taken.pk)}"' in body and "Sent to the lender" in body


def test_the_history_hands_each_delivery_its_own_tries_read_once_for_the_page(staff, taken):
    """The tries of every delivery are read in one query by the order and handed to their delivery's
    entry, oldest first, however their times interleave; the page shows each delivery's own."""
    first = staff_status(staff, taken, "Inspection booked")
    second = staff_status(staff, taken, "Inspection done")
    start = timezone.now() - timedelta(minutes=5)
    for n, (delivery, status) in enumerate([(second, 503), (first, 500), (second, 429), (first, None), (second, 422)]):
        DeliveryAttempt.objects.create(
            order=taken,
            delivery=delivery,
            call=ServiceCall.RESPONSE,
            started_at=start + timedelta(seconds=n),
            status_code=status,
            answer=f"answer {n}",
        )

    entries = {entry.delivery.pk: entry for entry in order_history(taken).timeline if entry.delivery is not None}
    assert [tried.answer for tried in entries[first.pk].tries] == ["answer 1", "answer 3"]
    assert [tried.answer for tried in entries[second.pk].tries] == ["answer 0", "answer 2", "answer 4"]
    shown = text(staff.get(page(taken.pk)))
    assert "Calls to the service: 2" in shown and "Calls to the service: 3" in shown
    assert shown.index("Calls to the service: 2") < shown.index("Calls to the service: 3")  # the first delivery's


def test_the_order_page_writes_its_times_as_the_date_filter_would_without_its_formatter(staff, taken, settings):
    """Times are written with strftime, in the current time zone, as the template language's `date`
    filter writes them for the same format characters (which cost five times the CPU)."""
    settings.TIME_ZONE = "America/New_York"
    at = datetime(2026, 3, 8, 6, 59, 7, tzinfo=UTC)  # 01:59:07 in New York, the night its clocks go forward
    with timezone.override("America/New_York"):
        for python, django in [("%Y-%m-%d %H:%M", "Y-m-d H:i"), ("%Y-%m-%d", "Y-m-d"), ("%H:%M:%S", "H:i:s")]:
            assert templating.strftime(at, python) == defaultfilters.date(template_localtime(at), django)
        assert templating.strftime(at, "%Y-%m-%d %H:%M:%S") == "2026-03-08 01:59:07"
    assert templating.strftime(None, "%Y-%m-%d") == ""  # no time, no text, as the filter
    staff_status(staff, taken, "Inspection booked")
    deliveries_sent(order_id=taken.pk)
    Order.objects.filter(pk=taken.pk).update(created_at=at)
    with mock.patch.object(DateFormat, "format", autospec=True, side_effect=DateFormat.format) as formatted:
        shown = text(staff.get(page(taken.pk)))
    assert [call.args[1] for call in formatted.call_args_list] == ["Z"]  # the admin frame's UTC offset only
    assert "<dt>Received</dt><dd>2026-03-08 01:59 (" in shown  # in the current time zone
    assert re.search(r'<td class="staff-when">\d{4}-\d\d-\d\d<br>\d\d:\d\d:\d\d</td>', shown)
    assert re.search(r'<div class="help">sent \d{4}-\d\d-\d\d \d\d:\d\d:\d\d</div>', shown)


def test_the_order_page_s_forms_share_one_masked_csrf_token(staff, taken):
    """Each form of the body sends the same CSRF token, masked once for the page (as the template
    language draws it), and a form of the page sent with it is taken."""
    staff.post(action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF)]})
    body = text(staff.get(page(taken.pk))).split('id="content-main"', 1)[1]
    tokens = re.findall(r'name="csrfmiddlewaretoken" value="([^"]+)"', body)
    assert len(tokens) >= 5 and len(set(tokens)) == 1  # release, the document's two, upload, status, deliver…
    checked = Client(enforce_csrf_checks=True)
    checked.cookies = staff.cookies  # the same session and CSRF cookie
    form = {"csrfmiddlewaretoken": tokens[-1], "status-partner_status": "Inspection booked"}
    assert checked.post(action("status_update", taken.pk), form).status_code == 302
    assert taken.deliveries.filter(partner_status="Inspection booked").exists()


@pytest.mark.parametrize(
    "fields, message",
    [
        (loan_inputs(borrower__name="x"), "The product may not send Borrower (borrower)"),
        (loan_inputs(appraisal__appraisedValue="812,000"), "Enter a number."),
        (loan_inputs(appraisal__effectiveDate="next Tuesday"), "Enter a valid date."),
        (loan_inputs(appraisal__condition="C9"), "Select a valid choice"),
        (loan_inputs(appraisal__comments="Only a comment"), "Appraisal, Appraised value: enter a value."),
        ({"kind": "whenever"}, "Select a valid choice"),
    ],
)
def test_a_delivery_that_breaks_a_rule_is_refused_and_stores_nothing(staff, taken, fields, message):
    refused = deliver(staff, taken, **{"kind": "partial", "partner_status": "Draft", **fields})
    assert refused.status_code == 200 and message in text(refused)
    assert taken.deliveries.count() == 1


def prefixed(fields: dict) -> dict:
    return {f"deliver-{name}": value for name, value in fields.items()}


def test_nothing_more_is_accepted_after_the_final_delivery(staff, taken):
    staff.post(action("deliver", taken.pk), {**prefixed({"kind": "final"}), "confirmed": "1"})
    refused = staff.post(action("status_update", taken.pk), {"status-partner_status": "one more thing"})
    assert "The final delivery or the decline is already made." in text(refused)
    late = deliver(staff, taken, kind="partial", partner_status="more")
    assert "The final delivery or the decline is already made." in text(late)
    assert taken.deliveries.count() == 2
    assert "nothing more can be sent" in text(staff.get(page(taken.pk)))


def test_an_action_product_gets_a_result_section(staff, make_order):
    entitlements = {
        "data": {
            "transaction": [
                {
                    "requestTypes": ["NEW_REQUEST"],
                    "response": {
                        "fields": [],
                        "results": [{"action": formats.DISCLOSURE_ACTION, "formats": [formats.DISCLOSURE_FORMAT]}],
                    },
                }
            ]
        }
    }
    order = make_order("txn-disclosure", product="disclosure-desk", entitlements=entitlements)
    staff.post(action("take", order.pk))
    form = text(staff.get(page(order.pk)))
    assert 'name="deliver-result_status"' in form and "deliver-loan__property__city" not in form

    fields = {"kind": "final", "result_status": "active", "result_comments": "Sent to borrower"}
    assert "Disclosure status" in text(staff.post(action("deliver", order.pk), prefixed(fields)))
    response = staff.post(action("deliver", order.pk), {**prefixed(fields), "confirmed": "1"})
    assert response.status_code == 302
    assert order.deliveries.get(kind=DeliveryKind.FINAL).result == {
        "format": formats.DISCLOSURE_FORMAT,
        "action": formats.DISCLOSURE_ACTION,
        "details": {"status": "active", "comments": "Sent to borrower"},
    }


def test_a_product_that_names_no_response_fields_gets_every_described_form_not_json(staff, make_order):
    entitlements = {"data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "response": {}}]}}
    order = make_order("txn-any-loan", product="free-form", entitlements=entitlements)
    staff.post(action("take", order.pk))
    form = text(staff.get(page(order.pk)))
    assert 'name="deliver-loan"' not in form
    assert 'name="deliver-loan__property__city"' in form and 'name="deliver-loan__appraisal__condition"' in form
    deliver(staff, order, kind="partial", **loan_inputs(property__city="Oakland"))
    assert order.deliveries.get(kind=DeliveryKind.PARTIAL).loan["property"]["city"] == "Oakland"


def test_a_field_no_form_describes_is_named_and_cannot_be_sent(staff, make_order):
    entitlements = {"data": {"transaction": [{"requestTypes": ["NEW_REQUEST"], "response": {"fields": ["floodZone"]}}]}}
    order = make_order("txn-flood", product="flood-desk", entitlements=entitlements)
    staff.post(action("take", order.pk))
    form = text(staff.get(page(order.pk)))
    assert "The product may send Flood zone, but no form says what it holds" in form
    assert "<textarea" not in form.split('id="delivery"')[1].split("</form>")[0]


def test_a_decline_asks_first_then_tells_the_lender_the_reason(staff, taken, tasks_sent):
    assert "The reason is empty." in text(staff.post(action("decline", taken.pk), {"decline-reason": ""}))
    asked = staff.post(action("decline", taken.pk), {"decline-reason": "Outside our area"})
    assert "Order declined: Outside our area" in text(asked) and "This cannot be undone" in text(asked)
    assert not taken.deliveries.filter(kind=DeliveryKind.DECLINE).exists()
    response = staff.post(action("decline", taken.pk), {"decline-reason": "Outside our area", "confirmed": "1"})
    assert response.status_code == 302
    decline = taken.deliveries.get(kind=DeliveryKind.DECLINE)
    assert (decline.state, decline.partner_status) == (DeliveryState.PENDING, "Order declined: Outside our area")


# Downloads and permissions ------------------------------------------------------------------------


def test_a_download_streams_the_file_with_its_headers_and_is_logged(staff, taken, caplog, viewer):
    staff.post(action("upload", taken.pk), {"upload-files": [upload("Report 1.pdf", PDF)]})
    document = taken.attachments.get()
    url = action("document_download", document.pk)
    with caplog.at_level(logging.INFO, logger="partner.fulfillment.staff.views"):
        response = staff.get(url)
    assert response.status_code == 200 and b"".join(response.streaming_content) == PDF
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="Report 1.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff"
    [record] = [r for r in caplog.records if r.name == "partner.fulfillment.staff.views"]
    assert record.getMessage() == f"document {document.pk} of transaction {taken.transaction_id} downloaded by staff"
    assert "appraisal report" not in caplog.text

    assert viewer[1].get(url).status_code == 200
    _, stranger = user_client("stranger")  # staff without any permission
    assert stranger.get(url).status_code == 403
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous.url.startswith(reverse("admin:login"))
    # The order admin links it too.
    assert url in text(staff.get(reverse("admin:fulfillment_order_change", args=[taken.pk])))


def test_view_only_staff_see_the_page_without_forms_and_cannot_act(taken, viewer, staff):
    staff.post(action("upload", taken.pk), {"upload-files": [upload("report.pdf", PDF)]})
    document = taken.attachments.get()
    delivery = taken.deliveries.get()
    user, client = viewer
    shown = text(client.get(page(taken.pk)))
    assert taken.reference_number in shown and "report.pdf" in shown
    assert "<form" not in shown.split('id="content-main"')[1]
    assert "Orders to work" in text(client.get(reverse(QUEUE)))

    posts = [
        (action("take", taken.pk), {}),
        (action("take_over", taken.pk), {}),
        (action("release", taken.pk), {}),
        (action("status_update", taken.pk), {"status-partner_status": "x"}),
        (action("upload", taken.pk), {"upload-files": [upload("a.pdf", PDF)]}),
        (action("deliver", taken.pk), {"deliver-kind": "final"}),
        (action("decline", taken.pk), {"decline-reason": "x"}),
        (action("document_remove", document.pk), {}),
        (action("document_replace", document.pk), {f"replace-{document.pk}-file": upload("b.pdf", PDF)}),
        (action("delivery_retry", delivery.pk), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
    assert client.get(action("take_over", taken.pk)).status_code == 403
    assert client.post(page(taken.pk), {}).status_code == 405  # the page itself takes no POST
    assert taken.deliveries.count() == 1 and taken.attachments.count() == 1


def test_the_change_permission_of_the_orders_to_work_is_enough_to_act(order):
    user, client = user_client("appraiser.cy", permissions=["view_stafforder", "change_stafforder"])
    assert client.post(action("take", order.pk)).status_code == 302
    order.refresh_from_db()
    assert order.assigned_to == user
