"""The connector's API over real HTTP with a real OAuth 2.0 client (client credentials): reads, every
answer, and each answer stored as the same Delivery a staff member's would be; scopes, idempotency,
problem+json errors and the OpenAPI document."""

import uuid

import pytest
import requests

from partner.connector.models import Event, IdempotentAnswer
from partner.connector.services import connection_create
from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState, OrderDocument
from partner.fulfillment.staff import services as staff
from tests.helpers.connector import PDF, TXN, ApiClient, connected_order
from tests.helpers.staff_orders import staff_member

pytestmark = pytest.mark.django_db(transaction=True)


def key() -> str:
    return str(uuid.uuid4())


@pytest.fixture
def api(live_server, connection, tasks_sent):
    created = connection.created
    return ApiClient(live_server.url, created.client_id, created.client_secret)


def test_without_a_token_401_and_with_a_wrong_scope_403_as_problems(live_server, connection, order, tasks_sent):
    answer = requests.get(f"{live_server.url}/api/v1/orders/{order.pk}", timeout=10)
    assert answer.status_code == 401
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.json()["type"].endswith("/unauthenticated") and "Bearer" in answer.headers["WWW-Authenticate"]

    created = connection.created
    reader = ApiClient(live_server.url, created.client_id, created.client_secret, scope="read")
    assert reader.get(f"/orders/{order.pk}").status_code == 200
    refused = reader.post(f"/orders/{order.pk}/status-updates", key=key(), json={"text": "Booked"})
    assert refused.status_code == 403 and refused.json()["type"].endswith("/forbidden")
    assert not Delivery.objects.filter(kind=DeliveryKind.STATUS_UPDATE).exists()

    bad = requests.post(
        f"{live_server.url}/api/v1/oauth/token",
        data={"grant_type": "client_credentials"},
        auth=(created.client_id, "not-the-secret"),
        timeout=10,
    )
    assert bad.status_code == 401


def test_read_and_list_only_the_connections_orders(api, order, fake_platform, live_server, connected_product):
    other = connection_create(name="other-system")
    stranger = ApiClient(live_server.url, other.client_id, other.client_secret)
    assert stranger.get(f"/orders/{order.pk}").status_code == 404
    assert stranger.get("/orders").json()["results"] == []

    body = api.get(f"/orders/{order.pk}").json()
    assert body["id"] == order.pk and body["status"] == "WITH_STAFF" and body["worked_by"] == "system.acme-amc"
    assert body["request"]["loan"]["loanNumber"] == "LN-2026-0042" and "credentials" not in str(body)
    assert [d["kind"] for d in body["deliveries"]] == ["acknowledgement"]

    second = connected_order(fake_platform, transaction_id="txn-connected-2", product_name=connected_product.name)
    listed = api.get("/orders", limit=1).json()
    assert listed["count"] == 2 and len(listed["results"]) == 1 and listed["next"]
    assert [o["id"] for o in api.get("/orders", status="WITH_STAFF").json()["results"]] == [second.pk, order.pk]
    assert api.get("/orders", status="DECLINED").json()["results"] == []
    assert api.get("/orders", updated_since="2999-01-01T00:00:00Z").json()["results"] == []
    bad = api.get("/orders", updated_since="yesterday")
    assert bad.status_code == 400 and "updated_since" in bad.json()["errors"]


def test_each_answer_is_the_delivery_a_staff_member_would_make(api, order, connection, tasks_sent):
    assert api.post(f"/orders/{order.pk}/acknowledge", key=key()).status_code == 200
    assert order.steps.filter(name="system_acknowledged").count() == 1

    update = api.post(f"/orders/{order.pk}/status-updates", key=key(), json={"text": "Inspection booked"})
    assert update.status_code == 201
    stored = Delivery.objects.get(pk=update.json()["delivery"]["id"])
    assert stored.kind == DeliveryKind.STATUS_UPDATE and stored.partner_status == "Inspection booked"
    assert stored.created_by == "system.acme-amc" and stored.state == DeliveryState.PENDING
    assert ("fulfillment.order_run", {"order_id": order.pk}) in [
        (n, {"order_id": k["order_id"]}) for n, k in tasks_sent
    ]

    photo = api.post(f"/orders/{order.pk}/documents", key=key(), files={"file": ("photos.pdf", PDF)})
    report = api.post(f"/orders/{order.pk}/documents", key=key(), files={"file": ("report.pdf", PDF)})
    assert photo.status_code == 201 and photo.json()["mime_type"] == "application/pdf"
    fake = api.post(f"/orders/{order.pk}/documents", key=key(), files={"file": ("x.pdf", b"MZ not a pdf")})
    assert fake.status_code == 422 and "PDF, PNG and JPEG" in fake.json()["detail"]

    partial = api.post(
        f"/orders/{order.pk}/deliveries",
        key=key(),
        json={"final": False, "message": "Photos", "documents": [photo.json()["id"]]},
    )
    assert partial.status_code == 201, partial.text
    assert OrderDocument.objects.get(pk=photo.json()["id"]).delivery_id == partial.json()["delivery"]["id"]
    assert OrderDocument.objects.get(pk=report.json()["id"]).delivery_id is None

    refused = api.post(
        f"/orders/{order.pk}/deliveries", key=key(), json={"final": True, "loan": {"borrower": {"name": "x"}}}
    )
    assert refused.status_code == 422 and "loan.borrower" in refused.json()["detail"]
    # Loan values are checked against the product's staff delivery form, as a staff member's are.
    off_form = api.post(
        f"/orders/{order.pk}/deliveries", key=key(), json={"final": True, "loan": {"appraisal": {"value": "812000"}}}
    )
    assert off_form.status_code == 422 and "Effective date" in off_form.json()["detail"], off_form.text
    appraisal = {"appraisedValue": 812000, "effectiveDate": "2026-11-20", "condition": "C3"}
    final = api.post(
        f"/orders/{order.pk}/deliveries",
        key=key(),
        json={"final": True, "message": "Appraisal complete", "loan": {"appraisal": appraisal}},
    )
    assert final.status_code == 201, final.text
    delivery = Delivery.objects.get(pk=final.json()["delivery"]["id"])
    assert delivery.kind == DeliveryKind.FINAL and delivery.loan == {"appraisal": appraisal}
    assert OrderDocument.objects.get(pk=report.json()["id"]).delivery_id == delivery.pk  # every waiting one

    after = api.post(f"/orders/{order.pk}/decline", key=key(), json={"reason": "Too late"})
    assert after.status_code == 422 and after.json()["type"].endswith("/answer-refused")
    assert Delivery.objects.filter(order=order, kind__in=[DeliveryKind.FINAL, DeliveryKind.DECLINE]).count() == 1


def test_a_decline_and_a_validation_error(api, order):
    empty = api.post(f"/orders/{order.pk}/decline", key=key(), json={})
    assert empty.status_code == 400 and empty.headers["Content-Type"] == "application/problem+json"
    assert "reason" in empty.json()["errors"]
    declined = api.post(f"/orders/{order.pk}/decline", key=key(), json={"reason": "Outside our area"})
    assert declined.status_code == 201
    assert Delivery.objects.get(pk=declined.json()["delivery"]["id"]).partner_status.endswith("Outside our area")


def test_an_order_taken_over_by_staff_refuses_the_systems_answers(api, order):
    staff.order_take(order_id=order.pk, user=staff_member(), take_over=True)
    refused = api.post(f"/orders/{order.pk}/status-updates", key=key(), json={"text": "Still here"})
    assert refused.status_code == 422 and refused.json()["type"].endswith("/taken-over")
    assert "took order" in refused.json()["detail"] and "take it over first" not in refused.json()["detail"]
    assert not Delivery.objects.filter(order=order, kind=DeliveryKind.STATUS_UPDATE).exists()


def test_the_same_answer_twice_with_one_key_and_with_two_keys(api, order):
    one = key()
    first = api.post(f"/orders/{order.pk}/status-updates", key=one, json={"text": "Booked"})
    again = api.post(f"/orders/{order.pk}/status-updates", key=one, json={"text": "Booked"})
    assert first.status_code == again.status_code == 201 and first.json() == again.json()
    assert Delivery.objects.filter(order=order, kind=DeliveryKind.STATUS_UPDATE).count() == 1

    other = api.post(f"/orders/{order.pk}/status-updates", key=one, json={"text": "Something else"})
    assert other.status_code == 422 and other.json()["type"].endswith("/idempotency-key-reused")
    missing = api.post(f"/orders/{order.pk}/status-updates", key="", json={"text": "Booked"})
    assert missing.status_code == 400 and missing.json()["type"].endswith("/idempotency-key-missing")

    # Two keys are two answers: the second final is refused by the order's rule, not stored.
    finals = [api.post(f"/orders/{order.pk}/deliveries", key=key(), json={"final": True}) for _ in range(2)]
    assert [f.status_code for f in finals] == [201, 422]
    assert Delivery.objects.filter(order=order, kind=DeliveryKind.FINAL).count() == 1
    assert IdempotentAnswer.objects.count() == 2  # the refused one stored nothing


def test_the_events_feed_pages_with_a_cursor(api, order, fake_platform, connected_product):
    connected_order(fake_platform, transaction_id="txn-connected-2", product_name=connected_product.name)
    first = api.get("/events", limit=1).json()
    [event] = first["events"]
    assert event["type"] == "order.created" and event["webhook_id"].startswith("msg_")
    assert event["payload"]["data"]["order"]["id"] == order.pk
    rest = api.get("/events", after=first["next_after"]).json()
    assert [e["id"] for e in rest["events"]] == [Event.objects.order_by("pk").last().position]
    assert api.get("/events", after=rest["next_after"]).json() == {"events": [], "next_after": rest["next_after"]}


def test_the_openapi_document_describes_the_api(live_server):
    schema = requests.get(f"{live_server.url}/api/schema/?format=json", timeout=10).json()
    paths = schema["paths"]
    assert "/api/v1/orders/{order_id}/deliveries" in paths and "/api/v1/events" in paths
    deliver = paths["/api/v1/orders/{order_id}/deliveries"]["post"]
    assert any(p["name"] == "Idempotency-Key" and p["in"] == "header" for p in deliver["parameters"])
    assert "DeliverIn" in schema["components"]["schemas"]
    assert "multipart/form-data" in paths["/api/v1/orders/{order_id}/documents"]["post"]["requestBody"]["content"]
    assert any("oauth2" in str(s).lower() for s in schema["components"].get("securitySchemes", {}).values())
    assert TXN not in str(schema)


def test_concurrent_finals_make_exactly_one(api, order):
    """Four finals at once (a system retrying with new keys, or racing a colleague): the order's lock
    lets one through, the others are refused by the rule, and one final delivery exists."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    barrier = Barrier(4)

    def final(n):
        barrier.wait()
        return api.post(f"/orders/{order.pk}/deliveries", key=key(), json={"final": True, "message": f"Done {n}"})

    with ThreadPoolExecutor(4) as pool:
        statuses = sorted(answer.status_code for answer in pool.map(final, range(4)))
    assert statuses == [201, 422, 422, 422]
    assert Delivery.objects.filter(order=order, kind=DeliveryKind.FINAL).count() == 1


def test_the_same_key_sent_twice_at_once_answers_once(api, order):
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    barrier, one = Barrier(2), key()

    def post(_):
        barrier.wait()
        return api.post(f"/orders/{order.pk}/status-updates", key=one, json={"text": "Booked"})

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(post, range(2)))
    assert [a.status_code for a in answers] == [201, 201] and answers[0].json() == answers[1].json()
    assert Delivery.objects.filter(order=order, kind=DeliveryKind.STATUS_UPDATE).count() == 1


def test_access_tokens_are_stored_hashed_and_still_work(api, connection):
    from oauth2_provider.models import AccessToken

    [token] = AccessToken.objects.filter(application=connection.application)
    assert token.token == "" and len(token.token_checksum) == 64  # no usable token at rest
    assert api.get("/orders").status_code == 200


def test_token_refusals_are_problems_that_oauth_clients_still_read(live_server, connection):
    created = connection.created
    url = f"{live_server.url}/api/v1/oauth/token"
    wrong = requests.post(url, data={"grant_type": "client_credentials"}, auth=(created.client_id, "nope"), timeout=10)
    assert wrong.status_code == 401 and wrong.headers["Content-Type"] == "application/problem+json"
    body = wrong.json()
    assert body["type"].endswith("/token-refused") and body["status"] == 401 and body["error"] == "invalid_client"
    assert body["detail"] == "The client id or secret is wrong."
    grant = requests.post(
        url, data={"grant_type": "no_such_grant"}, auth=(created.client_id, created.client_secret), timeout=10
    )
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    assert grant.headers["Content-Type"] == "application/problem+json"
    good = requests.post(
        url, data={"grant_type": "client_credentials"}, auth=(created.client_id, created.client_secret), timeout=10
    )
    assert good.status_code == 200 and good.json()["token_type"] == "Bearer" and good.json()["expires_in"] > 0


@pytest.mark.parametrize("where", ["basic", "body"])
def test_a_client_id_no_client_can_have_is_refused_as_unknown(live_server, connection, where):
    """A NUL byte in the client id (PostgreSQL refuses it in text) is an unknown client, not a 500."""
    url = f"{live_server.url}/api/v1/oauth/token"
    client_id = connection.created.client_id[:8] + "\x00" + connection.created.client_id[8:]
    secret = connection.created.client_secret
    if where == "basic":
        answer = requests.post(url, data={"grant_type": "client_credentials"}, auth=(client_id, secret), timeout=10)
    else:
        data = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
        answer = requests.post(url, data=data, timeout=10)
    assert answer.status_code == 401, answer.text
    assert answer.headers["Content-Type"] == "application/problem+json"
    assert answer.json()["error"] == "invalid_client"


def test_the_openapi_document_says_how_to_authenticate(live_server):
    schema = requests.get(f"{live_server.url}/api/schema/?format=json", timeout=10).json()
    flows = schema["components"]["securitySchemes"]["oauth2"]["flows"]
    assert flows == {
        "clientCredentials": {
            "tokenUrl": "/api/v1/oauth/token",
            "scopes": {"read": "Read orders and events", "answer": "Answer orders"},
        }
    }
    token = schema["paths"]["/api/v1/oauth/token"]["post"]
    assert set(token["requestBody"]["content"]) == {"application/x-www-form-urlencoded"}
    assert set(token["responses"]["401"]["content"]) == {"application/problem+json"}
    # the platform's webhook endpoint is typed (no */* a generated client cannot send)
    assert set(schema["paths"]["/v1/webhooks"]["post"]["requestBody"]["content"]) == {"application/json"}


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/orders", {"updated_since": ""}, "updated_since"),
        ("/orders", {"status": ""}, "status"),
        ("/orders", {"limit": "abc"}, "limit"),
        ("/orders", {"limit": "500"}, "limit"),
        ("/orders", {"offset": "-1"}, "offset"),
        ("/events", {"after": ""}, "after"),
        ("/events", {"after": "1.0"}, "after"),
        ("/events", {"limit": ""}, "limit"),
        ("/events", {"limit": "0"}, "limit"),
    ],
)
def test_queries_are_as_strict_as_the_document(api, path, params, field):
    answer = api.get(path, **params)
    assert answer.status_code == 400 and answer.headers["Content-Type"] == "application/problem+json"
    assert field in answer.json()["errors"]
