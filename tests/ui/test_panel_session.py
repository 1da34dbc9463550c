"""The panel session: the origin checked once with the service, then polls and downloads that cost the
service nothing and at most two queries, for the lender, product and loan it was made for only.

The origin proxy is read with Django's test client over the sandbox on the live server (real HTTP);
the polls then must not reach the service at all (`service_calls` counts every exchange).
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from partner.sandbox.origins import origin_create
from partner.ui.panel_sessions import PanelSession, PanelSessionInvalid, panel_session_issue, panel_session_read
from tests.helpers.orders import result_of

pytestmark = pytest.mark.django_db


def panel_of(client, seed, *, username="lender.demo", loan=None) -> dict:
    origin = origin_create(
        user=seed.users[username], loan=loan or seed.loans[0], product=seed.products["address-verification"]
    )
    body = client.get(f"/v1/origins/{origin.origin_id}", HTTP_X_PARTNER_ACCESS_TOKEN=origin.partner_access_token).json()
    return body


def poll(client, transaction_id, token):
    return client.get(f"/ui/transactions/{transaction_id}", HTTP_X_PANEL_SESSION=token)


def delivered_order(transaction_id="txn-panel-1", *, loan_number="DEMO-1001", username="lender.demo"):
    from partner.catalog.models import PartnerAccount
    from partner.fulfillment.models import Order, OrderStatus

    now = timezone.now()
    order = Order.objects.create(
        transaction_id=transaction_id,
        product_name="address-verification",
        status=OrderStatus.REQUEST_COMPLETED,
        loan_number=loan_number,
        reference_number="AV-PANEL1",
        ordered_by=PartnerAccount.objects.filter(username=username).first(),
        prepared_at=now,
        delivered_at=now,
        completed_at=now,
        response={"partnerStatus": "Address verified"},
    )
    order.attachments.create(
        delivery=result_of(order, "confirmed"),
        position=0,
        name="report.pdf",
        mime_type="application/pdf",
        size=8,
        resource_id="res-1",
        uploaded_at=now,
    )
    return order


def test_the_origin_proxy_gives_a_panel_session_bound_to_the_lender_product_and_loan(demo, client):
    from partner.catalog.models import PartnerAccount

    body = panel_of(client, demo)
    session = panel_session_read(body["panelSession"]["token"])
    account = PartnerAccount.objects.get(username="lender.demo")
    assert session.product_name == "address-verification"
    assert session.loan_number == "DEMO-1001"
    assert (session.account_id, session.company_id) == (account.pk, account.company_id)
    assert body["panelSession"]["expiresIn"] == 300
    assert "demo-password" not in body["panelSession"]["token"]


def test_twenty_polls_cost_the_service_nothing_and_two_queries_each(demo, client, service_calls):
    token = panel_of(client, demo)["panelSession"]["token"]
    delivered_order()
    service_calls.clear()
    counts = []
    for _ in range(20):
        with CaptureQueriesContext(connection) as queries:
            response = poll(client, "txn-panel-1", token)
        assert response.status_code == 200
        counts.append(len(queries))
    assert response.json()["step"] == "completed"
    assert len(service_calls) == 0 and len(service_calls.tokens) == 0
    assert max(counts) <= 2, counts


def test_a_staff_orders_poll_takes_two_queries_however_long_its_timeline(demo, client, fake_platform):
    """Deliveries and their documents come in one query (joined), the order with its lender in the other."""
    from partner.fulfillment.models import Delivery, DeliveryKind, DeliveryState

    token = panel_of(client, demo)["panelSession"]["token"]
    order = delivered_order("txn-panel-staff")
    order.staff_worked = True
    order.save(update_fields=["staff_worked"])
    now = timezone.now()
    for number in range(6):
        delivery = Delivery.objects.create(
            order=order, kind=DeliveryKind.PARTIAL, state=DeliveryState.SENT, sent_at=now, sequence=number
        )
        order.attachments.create(
            position=number + 1, name=f"part-{number}.pdf", mime_type="application/pdf", resource_id=f"r{number}",
            delivery=delivery,
        )  # fmt: skip
    Delivery.objects.create(order=order, kind=DeliveryKind.STATUS_UPDATE, state=DeliveryState.SENT, sent_at=now)
    with CaptureQueriesContext(connection) as queries:
        body = poll(client, "txn-panel-staff", token).json()
    assert len(queries) <= 2
    assert sorted(len(entry["documents"]) for entry in body["timeline"]) == [0] + [1] * 6


def test_a_forged_or_expired_session_is_refused_and_the_service_not_called(demo, client, settings, service_calls):
    delivered_order()
    good = panel_of(client, demo)["panelSession"]["token"]
    service_calls.clear()
    forged = good[:-3] + ("aaa" if not good.endswith("aaa") else "bbb")
    for token in (forged, "not-a-token", "x" * 5000):
        response = poll(client, "txn-panel-1", token)
        assert response.status_code == 401
        assert response.json()["errors"][0]["code"] == "panel_session_expired"
    settings.UI_PANEL_SESSION_SECONDS = -1  # every token is older than that
    assert poll(client, "txn-panel-1", good).status_code == 401
    assert len(service_calls) == 0


def test_the_session_shows_only_its_loans_orders(demo, client):
    token = panel_of(client, demo)["panelSession"]["token"]
    delivered_order("txn-other-loan", loan_number="DEMO-1002")
    response = poll(client, "txn-other-loan", token)
    assert response.status_code == 404
    assert "AV-PANEL1" not in response.content.decode()


def test_the_session_shows_only_its_lenders_orders(demo, client):
    from partner.catalog.services import partner_account_set

    partner_account_set(username="lender.other", password="someone-elses-password-3", company="OTHER01")
    token = panel_of(client, demo)["panelSession"]["token"]
    delivered_order("txn-other-lender", username="lender.other")
    assert poll(client, "txn-other-lender", token).status_code == 404


def test_a_document_downloads_with_the_session_and_no_service_call(demo, client, service_calls):
    from django.core.files.base import ContentFile

    token = panel_of(client, demo)["panelSession"]["token"]
    order = delivered_order()
    document = order.attachments.get()
    document.file.save("report.pdf", ContentFile(b"%PDF-1.7 report"), save=True)
    service_calls.clear()
    url = poll(client, "txn-panel-1", token).json()["timeline"][0]["documents"][0]["download_url"]
    response = client.get(url, HTTP_X_PANEL_SESSION=token)
    assert response.status_code == 200 and b"".join(response.streaming_content) == b"%PDF-1.7 report"
    assert len(service_calls) == 0


def test_polls_with_a_session_do_not_use_up_the_origin_rate_limit(demo, client, settings):
    settings.RATELIMIT_ORIGIN = "3/m"
    token = panel_of(client, demo)["panelSession"]["token"]  # one of the three
    delivered_order()
    assert all(poll(client, "txn-panel-1", token).status_code == 200 for _ in range(10))


def test_a_session_signed_for_another_shape_is_refused(settings):
    from django.core import signing

    token = signing.dumps({"origin_id": "o"}, salt="partner.ui.panel-session", compress=True)
    with pytest.raises(PanelSessionInvalid):
        panel_session_read(token)
    session = PanelSession(origin_id="o", product_name="p", loan_number="L", account_id=1, company_id=None)
    assert panel_session_read(panel_session_issue(session)) == session
