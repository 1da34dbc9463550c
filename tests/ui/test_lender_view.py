"""The lender's view of an order, rule by rule: steps with their times, what the partner found, failures
explained by cause, only delivered documents, following a failed order, and the loan's earlier orders.

The services are called directly (`transaction_progress_get`, `failure_explained`,
`earlier_orders_list`); the origin proxy's additions are read over HTTP against the sandbox.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from partner.catalog.credentials import NO_CREDENTIALS, NOT_VALID
from partner.fulfillment.models import FailureCode, Order, OrderStatus
from partner.ui.outcomes import failure_explained
from partner.ui.progress import transaction_progress_get
from partner.ui.selectors import earlier_orders_list
from tests.helpers.orders import result_of

PRODUCT = "address-verification"
FINDINGS = [
    {"field": "city", "label": "City", "before": "Boston", "after": "New York", "changed": True},
    {"field": "state", "label": "State", "before": "NY", "after": "NY", "changed": False},
]


def order_make(transaction_id="txn-view-1", **fields) -> Order:
    return Order.objects.create(transaction_id=transaction_id, product_name=PRODUCT, **fields)


def view(transaction_id="txn-view-1", **lender):
    return transaction_progress_get(transaction_id=transaction_id, product_name=PRODUCT, **lender)


@pytest.mark.django_db
def test_a_quick_order_shows_when_it_reached_each_step():
    start = timezone.now() - timedelta(seconds=3)
    order_make(
        status=OrderStatus.REQUEST_COMPLETED,
        prepared_at=start + timedelta(seconds=1),
        delivered_at=start + timedelta(seconds=2),
        completed_at=start + timedelta(seconds=3),
    )
    Order.objects.filter(transaction_id="txn-view-1").update(created_at=start)
    steps = {step["key"]: step["reached_at"] for step in view()["steps"]}
    assert steps == {
        "requested": start.isoformat(),
        "in_progress": (start + timedelta(seconds=1)).isoformat(),
        "delivered": (start + timedelta(seconds=2)).isoformat(),
        "completed": (start + timedelta(seconds=3)).isoformat(),
    }


@pytest.mark.django_db
def test_a_failed_order_keeps_the_steps_it_reached_and_says_when_it_ended():
    now = timezone.now()
    order_make(status=OrderStatus.FAILED, prepared_at=now, failed_at=now, failure_code=FailureCode.RETRIES_EXHAUSTED)
    body = view()
    reached = [step["key"] for step in body["steps"] if step["reached_at"]]
    assert reached == ["requested", "in_progress"]
    assert body["ended_at"] == now.isoformat()


@pytest.mark.django_db
def test_the_partner_reference_and_who_ordered_it_when_are_shown():
    from partner.catalog.services import partner_account_set

    account = partner_account_set(username="lender.view", password="view-password-12", company="VIEW01")[0]
    order = order_make(status=OrderStatus.IN_PROGRESS, reference_number="AV-1A2B3C", ordered_by=account)
    body = view(account_id=account.pk, company_id=account.company_id)
    assert (body["reference_number"], body["ordered_by"]) == ("AV-1A2B3C", "lender.view")
    assert body["ordered_at"] == order.created_at.isoformat()


@pytest.mark.django_db
def test_findings_are_shown_once_the_response_was_delivered_only():
    order = order_make(status=OrderStatus.IN_PROGRESS, prepared_at=timezone.now(), findings=FINDINGS)
    assert view()["findings"] == []  # prepared, not delivered: the lender has not got it
    Order.objects.filter(pk=order.pk).update(status=OrderStatus.RESPONSE_DELIVERED, delivered_at=timezone.now())
    assert view()["findings"] == FINDINGS


@pytest.mark.django_db
def test_a_failed_delivery_offers_no_document():
    """The report was uploaded, then the PATCH failed for good: the lender never got it."""
    now = timezone.now()
    order = order_make(status=OrderStatus.FAILED, failed_at=now, failure_code=FailureCode.RETRIES_EXHAUSTED)
    order.attachments.create(
        delivery=result_of(order, "failed"),
        position=0,
        name="r.pdf",
        mime_type="application/pdf",
        resource_id="x",
        uploaded_at=now,
    )
    body = view()
    assert body["documents"] == [] and body["timeline"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "code, cause, reason_shown",
    [
        (FailureCode.CREDENTIALS_INVALID, "credentials", True),
        (FailureCode.ORDER_REFUSED, "loan_data", True),
        (FailureCode.RETRIES_EXHAUSTED, "platform", False),  # the reason names the platform's outage
        (FailureCode.SERVICE_REJECTED, "partner", False),
        (FailureCode.SETUP_INCOMPLETE, "partner", False),
        (FailureCode.PRODUCT_UNKNOWN, "partner", False),
        ("", "partner", False),
    ],
)
def test_a_failure_is_explained_by_its_cause(code, cause, reason_shown):
    reason = (
        "Gave up after retries: ServiceUnavailableError: PATCH http://svc/response - HTTP 500: {}"
        if not reason_shown
        else "The ZIP code 99999 is not a US ZIP code."
    )
    order_make(status=OrderStatus.FAILED, failure_code=code, failure_reason=reason, reference_number="AV-9")
    body = view()
    assert body["failure"]["cause"] == cause
    text = " ".join([body["failure"]["title"], body["failure"]["text"], body["failure"]["next"], body["reason"]])
    assert (reason in text) is reason_shown
    assert "HTTP" not in text and "Error" not in text  # no internals, whatever the cause


def test_each_cause_says_what_to_do():
    credentials = failure_explained(code=FailureCode.CREDENTIALS_INVALID, reason="Wrong password.", reference="")
    data = failure_explained(code=FailureCode.ORDER_REFUSED, reason="No ZIP code.", reference="")
    ours = failure_explained(code=FailureCode.RETRIES_EXHAUSTED, reason="boom", reference="AV-7")
    assert "user name and password" in credentials["next"] and "settings" in credentials["next"]
    assert "Correct the loan" in data["next"]
    assert "do not need to order again" in ours["next"] and "contact the partner, quoting AV-7" in ours["next"]


def test_missing_credentials_are_not_called_wrong_ones():
    missing = failure_explained(code=FailureCode.CREDENTIALS_INVALID, reason=NO_CREDENTIALS, reference="")
    wrong = failure_explained(code=FailureCode.CREDENTIALS_INVALID, reason=NOT_VALID, reference="")

    assert missing["cause"] == "credentials_missing" and wrong["cause"] == "credentials"
    assert missing["title"] == "No partner credentials are set up for this product"
    assert "not accepted" not in " ".join(missing.values())
    assert "enter the user name and password the partner gave you" in missing["next"]
    assert wrong["title"] == "Your partner credentials were not accepted" and wrong["text"] == NOT_VALID
    for explained in (missing, wrong):  # one spelling for people
        assert "username" not in " ".join(explained.values()).lower()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "status, finished",
    [
        (OrderStatus.IN_PROGRESS, False),
        (OrderStatus.RESPONSE_DELIVERED, False),
        (OrderStatus.FAILED, False),  # staff may send it through again: the page keeps following it
        (OrderStatus.REQUEST_COMPLETED, True),
        (OrderStatus.DECLINED, True),
    ],
)
def test_the_page_follows_an_order_while_it_can_change(status, finished):
    order_make(status=status)
    assert view()["finished"] is finished


@pytest.mark.django_db
def test_earlier_orders_of_the_loan_are_listed_for_the_lender_newest_first():
    from partner.catalog.services import partner_account_set

    mine = partner_account_set(username="lender.one", password="one-password-123", company="ONE01")[0]
    colleague = partner_account_set(username="lender.two", password="two-password-123", company="ONE01")[0]
    other = partner_account_set(username="lender.three", password="three-password-1", company="OTHER01")[0]
    old = order_make("txn-old", loan_number="L-1", reference_number="AV-OLD", ordered_by=mine)
    Order.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=2))
    order_make("txn-new", loan_number="L-1", reference_number="AV-NEW", ordered_by=colleague, status=OrderStatus.FAILED)
    order_make("txn-theirs", loan_number="L-1", ordered_by=other)  # another lender's
    order_make("txn-other-loan", loan_number="L-2", ordered_by=mine)
    Order.objects.create(transaction_id="txn-other-product", product_name="appraisal", loan_number="L-1")

    listed = earlier_orders_list(
        product_name=PRODUCT, loan_number="L-1", account_id=mine.pk, company_id=mine.company_id
    )
    assert [(o["transactionId"], o["referenceNumber"], o["step"]) for o in listed] == [
        ("txn-new", "AV-NEW", "failed"),
        ("txn-old", "AV-OLD", "requested"),
    ]
    assert listed[0]["orderedBy"] == "lender.two"
    assert earlier_orders_list(product_name=PRODUCT, loan_number="", account_id=mine.pk, company_id=None) == []


@pytest.mark.django_db(transaction=True)
def test_the_origin_proxy_gives_fee_turnaround_and_earlier_orders(demo, client):
    from partner.catalog.models import PartnerAccount, Product
    from partner.sandbox.origins import origin_create

    Product.objects.filter(name=PRODUCT).update(fee="45.00", turnaround_hours=48)
    order_make(
        "txn-earlier",
        loan_number="DEMO-1001",
        reference_number="AV-EARLY",
        ordered_by=PartnerAccount.objects.get(username="lender.demo"),
    )
    origin = origin_create(user=demo.users["lender.demo"], loan=demo.loans[0], product=demo.products[PRODUCT])
    body = client.get(f"/v1/origins/{origin.origin_id}", HTTP_X_PARTNER_ACCESS_TOKEN=origin.partner_access_token).json()
    assert (body["product"]["fee"], body["product"]["turnaroundHours"]) == ("45.00", 48)
    assert [o["referenceNumber"] for o in body["earlierOrders"]] == ["AV-EARLY"]


def test_an_outage_of_the_platform_is_not_called_a_problem_on_the_partners_side():
    outage = failure_explained(
        code=FailureCode.RETRIES_EXHAUSTED,
        reason="Gave up after retries: ServiceUnavailableError: GET /partner/v2/transactions/x — HTTP 500: {}",
        reference="AV-7",
    )
    ours = failure_explained(
        code=FailureCode.RETRIES_EXHAUSTED, reason="Gave up after retries: KeyError: 'x'", reference=""
    )

    assert outage["cause"] == "platform" and outage["title"] == "The loan platform was unavailable"
    assert "partner's side" not in outage["text"]
    assert ours["cause"] == "partner" and "partner's side" in ours["text"]
