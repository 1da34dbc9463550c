"""The demo's staff-worked appraisal, the demo staff login, and the sandbox's record of every PATCH.

- `make demo`: the sandbox's appraisal product and, before the service is up, ours: staff-worked
  (the default rule), with its turnaround and staff address (the Makefile's recipe, run here command
  by command); a later pull keeps our settings;
- each PATCH of a response kept as it came, in order, shown in the sandbox's admin and on the host
  page, and purged with its transaction;
- the five PATCHes of a staff-worked order, built by our own code, accepted for the appraisal and
  each answered by one "processed" event naming its response version.
"""

import io
import json
import re
import shlex
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from partner.catalog.fulfiller_keys import CONNECTED
from partner.catalog.models import Product
from partner.catalog.services import product_staff_settings_set, products_pull
from partner.connector.models import Connection
from partner.core.demo_values import DEMO_STAFF_PASSWORD, DEMO_STAFF_USERNAME
from partner.fulfillment.models import Delivery, DeliveryKind, Order
from partner.fulfillment.sending.sender import delivery_payload
from partner.fulfillment.staff.fulfillers import StaffWorkedFulfiller
from partner.platform import client, urns
from partner.platform.errors import ServiceError
from partner.sandbox import retention
from partner.sandbox.models import Event, Response, ResponsePatch, Transaction
from partner.sandbox.seeding import sandbox_seed
from partner.sandbox.transactions import response_patch, transaction_create
from partner.sandbox.uploads import upload_accept, upload_slots_request
from partner.sandbox.webhooks import webhook_deliveries_wait
from tests.helpers.sandbox import host_transaction

ROOT = Path(__file__).resolve().parents[2]
APPRAISAL = "appraisal"
PDF = b"%PDF-1.7\n% appraisal report\n"
BASE = "http://testserver/sandbox"


def recipe(target: str) -> list[str]:
    """The command lines of a Makefile target, as make runs them (leading @ dropped)."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    body = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        body.append(line[1:].lstrip("@"))
    return body


def manage_py_run(line: str) -> None:
    """Run one `[printf 'stdin' |] $(PY) manage.py COMMAND ARGS` line of the Makefile in this process."""
    stdin = None
    if "|" in line:
        feed, line = (part.strip() for part in line.split("|", 1))
        (text,) = shlex.split(feed)[1:]
        stdin = io.StringIO(text.replace("\\n", "\n"))
    words = shlex.split(line)
    assert words[:2] == ["$(PY)", "manage.py"], line
    call_command(*words[2:], stdout=io.StringIO(), **({"stdin": stdin} if stdin else {}))


# make demo: the appraisal product, ours staff-worked -------------------------------------------------------------


def test_the_seed_adds_the_appraisal_product_to_the_sandbox(db):
    seed = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    appraisal, address = seed.products[APPRAISAL].data, seed.products["address-verification"].data
    assert appraisal["listingName"] == "Residential appraisal"
    assert appraisal["tags"]["workflows"] == ["interactive"]
    assert appraisal["tags"]["categories"] == ["APPRAISAL"]
    assert appraisal["requestTypes"] == ["NEW_REQUEST"]
    assert appraisal["entitlements"]["access"] == address["entitlements"]["access"]
    (entitlement,) = appraisal["entitlements"]["data"]["transaction"]
    assert entitlement["requestTypes"] == ["NEW_REQUEST"]
    assert entitlement["response"]["fields"] == ["property", "appraisal"]
    assert appraisal["credentials"] == address["credentials"] and appraisal["credential"] == address["credential"]
    hooks = {hook["resource"]: hook["url"] for hook in appraisal["webhooks"]}
    assert hooks == {
        urns.transaction_resource_type(): "http://127.0.0.1:8000/v1/webhooks",
        urns.event_resource_type(): "http://127.0.0.1:8000/v1/webhooks",
    }


def test_make_demo_fills_our_catalog_and_the_staff_login_before_the_service_is_up(
    db, client, tmp_path, monkeypatch, service_calls, settings
):
    settings.DEBUG = True  # as in a local run (.env.example); the test runner turns it off
    monkeypatch.chdir(tmp_path)  # the recipe's var/ file lands here
    settings.SVC_BASE_URL = "http://127.0.0.1:9/sandbox"  # nothing answers: the recipe must not need the service
    for line in recipe("demo"):
        manage_py_run(line)
    assert service_calls == [] and service_calls.tokens == []

    ours = Product.objects.get(name=APPRAISAL)
    # The default rule makes it staff-worked (interactive, not automated); the demo then connects it to
    # the example order system (connection_demo), from which staff can take its orders over.
    assert ours.fulfiller == CONNECTED
    assert Connection.objects.filter(products=ours).count() == 1
    assert ours.listing_name == "Residential appraisal"
    assert ours.turnaround_hours == 48 and ours.staff_email == "appraisals@partner.example"
    assert [d.key for d in ours.credential_definitions.order_by("position")] == ["username", "password", "companyCode"]
    assert Product.objects.get(name="address-verification").fulfiller != StaffWorkedFulfiller.key

    staff = get_user_model().objects.get(username=DEMO_STAFF_USERNAME)
    assert staff.check_password(DEMO_STAFF_PASSWORD) and staff.is_staff and not staff.is_superuser
    client.force_login(staff)  # staff.demo at work in the admin while make run starts again

    for line in recipe("demo"):  # make run again: the same rows, nothing doubled
        manage_py_run(line)
    assert Product.objects.filter(name=APPRAISAL).count() == 1
    assert get_user_model().objects.filter(username=DEMO_STAFF_USERNAME).count() == 1
    # The login was only created when missing: its password was not set again, its session lives on.
    assert get_user_model().objects.get(username=DEMO_STAFF_USERNAME).password == staff.password
    assert client.get(reverse("admin:index")).status_code == 200


def test_make_run_prints_the_staff_login_make_demo_creates():
    printed = (ROOT / "bin" / "run").read_text()  # make run's links are bin/run's
    assert any("bin/run" in line for line in recipe("run"))
    assert re.search(rf"{re.escape(DEMO_STAFF_USERNAME)} / {re.escape(DEMO_STAFF_PASSWORD)}", printed)
    created = [line for line in recipe("demo") if "staff_account" in line]
    assert created == [
        f"printf '{DEMO_STAFF_PASSWORD}\\n' | $(PY) manage.py staff_account {DEMO_STAFF_USERNAME} "
        "--email staff.demo@partner.example --keep-existing"
    ]


@pytest.mark.django_db(transaction=True)
def test_after_the_pull_our_appraisal_is_staff_worked_and_keeps_its_settings(demo):
    ours = Product.objects.get(name=APPRAISAL)
    assert ours.fulfiller == StaffWorkedFulfiller.key
    product_staff_settings_set(name=APPRAISAL, turnaround_hours=48, staff_email="appraisals@partner.example")
    products_pull()  # the service's copy again: our own settings stay
    ours.refresh_from_db()
    assert (ours.fulfiller, ours.turnaround_hours, ours.staff_email) == (
        StaffWorkedFulfiller.key,
        48,
        "appraisals@partner.example",
    )


def test_host_page_offers_the_appraisal(client, db):
    sandbox_seed(public_base_url="http://127.0.0.1:8000")
    context = client.get("/sandbox/host-api/context").json()
    assert {"name": APPRAISAL, "listingName": "Residential appraisal"}.items() <= next(
        p for p in context["products"] if p["name"] == APPRAISAL
    ).items()


# every PATCH kept, shown, purged ---------------------------------------------------------------------------------

PATCHES = [
    {"status": "processing", "partnerStatus": "Order received", "referenceNumber": "OR-1"},
    {"status": "processing", "partnerStatus": "Inspection booked for Tuesday"},
    {"status": "completed", "partnerStatus": "Appraisal complete"},  # + the uploaded report
]


@pytest.fixture
def patched(db):
    seed = sandbox_seed(public_base_url="http://127.0.0.1:8000")
    txn = transaction_create(product=APPRAISAL, user=seed.users["lender.demo"], loan=seed.loans[0], send_webhook=False)
    slot = upload_slots_request(
        transaction_id=txn.id, items=[{"name": "r.pdf", "mimeType": "application/pdf"}], base_url=BASE
    )[0]
    upload_accept(slot_id=slot["id"], authorization=slot["authorization"], content_type="application/pdf", content=PDF)
    PATCHES[2]["resources"] = [{"id": slot["id"], "name": "r.pdf", "mimeType": "application/pdf"}]
    for payload in PATCHES:
        response_patch(transaction_id=txn.id, payload=payload, base_url=BASE)
    return txn


def test_each_patch_is_kept_as_it_came_in_order(patched):
    rows = list(ResponsePatch.objects.filter(transaction=patched))
    assert [row.number for row in rows] == [1, 2, 3]
    assert [row.payload["partnerStatus"] for row in rows] == [p["partnerStatus"] for p in PATCHES]
    assert rows[1].payload == PATCHES[1]  # not the merged response: what this PATCH said
    assert Response.objects.get(transaction=patched).data["referenceNumber"] == "OR-1"


def test_the_sandbox_admin_lists_each_patch_of_a_transaction(staff, patched):
    page = staff.get(reverse("admin:sandbox_transaction_change", args=[patched.id]))
    assert page.status_code == 200
    html = page.content.decode()
    listed = html[html.index("Response PATCHes (each as it came)") :]
    positions = [listed.index(p["partnerStatus"]) for p in PATCHES]
    assert positions == sorted(positions)
    slot_id = PATCHES[2]["resources"][0]["id"]
    assert f"r.pdf ({slot_id})" in listed and "referenceNumber OR-1" in listed


def test_the_host_page_lists_each_patch_of_a_transaction(client, patched):
    context = client.get("/sandbox/host-api/context").json()
    (row,) = [t for t in context["transactions"] if t["id"] == patched.id]
    assert [(p["number"], p["status"], p["partnerStatus"]) for p in row["patches"]] == [
        (1, "processing", "Order received"),
        (2, "processing", "Inspection booked for Tuesday"),
        (3, "completed", "Appraisal complete"),
    ]
    assert row["patches"][2]["resources"] == ["r.pdf"]


def test_the_patches_go_with_their_transaction_in_the_retention_purge(patched, monkeypatch):
    monkeypatch.setattr(retention, "transactions_open", lambda ids: set())
    assert sum(retention.transactions_purge(timezone.now() + timedelta(days=1), 100)) == 1
    assert not Transaction.objects.filter(pk=patched.pk).exists()
    assert not ResponsePatch.objects.exists()


# the five PATCHes of a staff-worked order --------------------------------------------------------------------------


def _delivery(kind, **fields):
    return Delivery(kind=kind, **fields)


def _patch(transaction_id, payload) -> dict:
    client.patch_response(transaction_id, payload)
    return payload


@pytest.mark.django_db(transaction=True)
def test_the_sandbox_takes_the_five_patches_of_a_staff_worked_order(sandbox):
    worked = host_transaction(sandbox, product=APPRAISAL)
    declined = host_transaction(sandbox, product=APPRAISAL, loan=1)
    product = sandbox.seed.products[APPRAISAL].data
    order = Order(transaction_id=worked, reference_number="OR-WORKED")

    acknowledgement = StaffWorkedFulfiller().fulfill(transaction_id=worked, request={}, product=product).response
    assert {"status", "partnerStatus", "referenceNumber", "respondingParty"} <= set(acknowledgement)
    sent = [_patch(worked, acknowledgement)]
    status_update = delivery_payload(order, _delivery(DeliveryKind.STATUS_UPDATE, partner_status="Booked"), [])
    assert set(status_update) == {"status", "partnerStatus", "referenceNumber"}
    sent.append(_patch(worked, status_update))

    slots = client.request_upload_slots(worked, [{"name": "photos.pdf", "mimeType": "application/pdf"}])
    client.upload_resource(slots[0], PDF)
    partial = delivery_payload(
        order,
        _delivery(DeliveryKind.PARTIAL, partner_status="Photos", loan={"appraisal": {"inspectionDate": "2026-02-03"}}),
        [],
    ) | {"resources": [slots[0].resource()]}
    sent.append(_patch(worked, partial))

    slots = client.request_upload_slots(worked, [{"name": "appraisal.pdf", "mimeType": "application/pdf"}])
    client.upload_resource(slots[0], PDF)
    final = delivery_payload(
        order,
        _delivery(DeliveryKind.FINAL, partner_status="Appraisal complete", loan={"appraisal": {"value": "812000"}}),
        [],
    ) | {"resources": [slots[0].resource()]}
    assert final["status"] == "completed"
    sent.append(_patch(worked, final))

    decline = delivery_payload(
        Order(transaction_id=declined, reference_number="OR-DECLINED"),
        _delivery(DeliveryKind.DECLINE, partner_status="Order declined: no access to the property"),
        [],
    )
    assert decline["status"] == "completed"
    _patch(declined, StaffWorkedFulfiller().fulfill(transaction_id=declined, request={}, product=product).response)
    _patch(declined, decline)

    assert [row.payload for row in ResponsePatch.objects.filter(transaction_id=worked)] == sent
    merged = Response.objects.get(transaction_id=worked).data
    assert merged["status"] == "completed" and merged["loan"]["appraisal"] == {
        "inspectionDate": "2026-02-03",
        "value": "812000",
    }
    assert sorted(r["name"] for r in merged["resources"]) == ["appraisal.pdf", "photos.pdf"]
    assert Response.objects.get(transaction_id=declined).data["partnerStatus"].startswith("Order declined: ")

    # One "processed" event per PATCH, each naming its response version, each announced by a webhook.
    for transaction_id, count in ((worked, 4), (declined, 2)):
        events = list(Event.objects.filter(transaction_id=transaction_id).order_by("created_at", "id"))
        assert [e.type for e in events] == [urns.response_processed_event_type()] * count
        versions = [client.get_event(transaction_id, e.id).raw["details"]["responseVersion"] for e in events]
        assert versions == list(range(1, count + 1))
    assert webhook_deliveries_wait(20)
    announced = [json.loads(call.body) for call in sandbox.receiver.calls]
    event_ids = {e.id for e in Event.objects.all()}
    assert sorted(n["meta"]["resourceId"] for n in announced if n["meta"]["resourceId"] in event_ids) == sorted(
        event_ids
    )

    # The appraisal's response entitlement is real: another loan field is refused.
    with pytest.raises(ServiceError) as refused:
        client.patch_response(worked, {"loanFormat": final["loanFormat"], "loan": {"borrower": {"firstName": "X"}}})
    assert refused.value.status == 403
    assert ResponsePatch.objects.filter(transaction_id=worked).count() == 4


def test_the_host_api_creates_an_appraisal_order(sandbox):
    answer = requests.get(f"{sandbox.host_api}/context", timeout=10).json()
    assert APPRAISAL in {p["name"] for p in answer["products"]}
    transaction_id = host_transaction(sandbox, product=APPRAISAL)
    assert Transaction.objects.get(pk=transaction_id).product.name == APPRAISAL
