"""An order's page in the admin: the outcome on top (a failed order's cause and what to do, by kind of
failure, Retry only where it can help, who ordered it for which company), the request and the findings
as tables, no empty section, the history in the staff's words, and no way to delete an order (the
audit trail)."""

import html

import pytest
from django.urls import reverse

from partner.fulfillment.models import FailureCode, Order, OrderStatus

pytestmark = pytest.mark.django_db

REQUEST = {
    "type": "NEW_REQUEST",
    "loan": {"loanNumber": "LN-77", "property": {"postalCode": "94105", "propertyUsageType": "PrimaryResidence"}},
}
FINDINGS = [
    {"field": "city", "label": "City", "before": "San Fran", "after": "San Francisco", "changed": True},
    {"field": "postalCode", "label": "ZIP code", "before": "94105", "after": "94105", "changed": False},
]


def page_of(client, order) -> str:
    return client.get(reverse("admin:fulfillment_order_change", args=[order.pk])).content.decode()


def failed_order() -> Order:
    return Order.objects.create(
        transaction_id="txn-failed-page",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason="Gave up after retries: the service answered 503 six times.",
        request=REQUEST,
        findings=FINDINGS,
    )


def outcome_of(page: str) -> str:
    return html.unescape(page.split('id="order-outcome"')[1].split("</div>")[0])


def test_a_failed_orders_page_starts_with_its_outcome_cause_and_retry(staff, tasks_sent):
    order = failed_order()
    page = page_of(staff, order)
    outcome = outcome_of(page)
    assert page.index('id="order-outcome"') < page.index("<fieldset")  # on top, before every field
    assert "Failed" in outcome.split("</h2>")[0]
    assert "An error in this application stopped the order." in outcome
    assert "Tell your technical team" in outcome
    assert "Gave up after retries" not in outcome  # the recorded error stays under Technical detail
    assert reverse("admin:fulfillment_order_retry_one", args=[order.pk]) in outcome

    done = staff.post(reverse("admin:fulfillment_order_retry_one", args=[order.pk]), follow=True)
    assert "The order is back at work" in done.content.decode()
    order.refresh_from_db()
    assert order.status == OrderStatus.VALIDATION_REQUESTED


def test_a_delivered_orders_page_offers_confirm_on_top(staff):
    order = Order.objects.create(transaction_id="txn-delivered-page", status=OrderStatus.RESPONSE_DELIVERED)
    outcome = page_of(staff, order).split('id="order-outcome"')[1].split("</div>")[0]
    assert "waiting for the platform to confirm" in outcome
    staff.post(reverse("admin:fulfillment_order_confirm_one", args=[order.pk]))
    order.refresh_from_db()
    assert order.status == OrderStatus.REQUEST_COMPLETED


def test_the_request_and_findings_are_tables_in_staff_words_not_json(staff):
    page = page_of(staff, failed_order())
    assert '<tr><th scope="row">Loan: Subject property: ZIP code</th><td>94105</td></tr>' in page
    assert '<tr><th scope="row">Loan: Subject property: Property usage</th><td>Primary residence</td></tr>' in page
    assert '<th scope="row">City</th><td>San Fran</td><td>San Francisco</td><td>yes</td>' in page
    assert '"propertyUsageType"' not in page and "&quot;loanNumber&quot;" not in page


def test_view_only_staff_see_no_retry_button(client, django_user_model):
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("viewer", "v@partner.example", "pw-viewer-123", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_order"))
    client.force_login(viewer)
    order = failed_order()
    assert "Retry the order" not in page_of(client, order)
    assert client.post(reverse("admin:fulfillment_order_retry_one", args=[order.pk])).status_code == 403
    order.refresh_from_db()
    assert order.status == OrderStatus.FAILED


def test_orders_cannot_be_deleted_from_the_admin(staff):
    order = failed_order()
    assert "deletelink" not in page_of(staff, order)
    assert staff.get(reverse("admin:fulfillment_order_delete", args=[order.pk])).status_code == 403
    listing = staff.get(reverse("admin:fulfillment_order_changelist")).content.decode()
    assert 'value="delete_selected"' not in listing
    assert Order.objects.filter(pk=order.pk).exists()


OUTAGE = (
    "Gave up after retries: ServiceUnavailableError: transaction retrieval GET /partner/v2/transactions/x"
    " — HTTP 500: {}"
)


@pytest.mark.parametrize(
    "code, reason, cause, action, retry",
    [
        (
            FailureCode.RETRIES_EXHAUSTED,
            OUTAGE,
            "The loan platform was unavailable (it answered HTTP 500)",
            "Health",
            True,
        ),
        (
            FailureCode.SERVICE_REJECTED,
            "The service refused GET /partner/v2/transactions/x with status 401",
            "refused this application's own credentials (it answered HTTP 401)",
            "client id and secret",
            True,
        ),
        (
            FailureCode.SERVICE_REJECTED,
            "The service refused PATCH /partner/v2/transactions/x/response with status 400",
            "refused what was sent for this order (it answered HTTP 400)",
            "Retry is not offered",
            False,
        ),
        (
            FailureCode.CREDENTIALS_INVALID,
            "The password is wrong.",
            "were not accepted: The password is wrong.",
            "place a new order",
            False,
        ),
        (
            FailureCode.ORDER_REFUSED,
            "No ZIP code.",
            "could not use the lender's loan data: No ZIP code.",
            "correct the loan",
            False,
        ),
        (
            FailureCode.SETUP_INCOMPLETE,
            "No report template.",
            "setup in this application is incomplete",
            "under Products",
            True,
        ),
        (FailureCode.PRODUCT_UNKNOWN, "Product 'x' is not configured", "does not know", "Pull the products", True),
        (
            FailureCode.RESOURCE_OUTSIDE_SERVICE,
            "The notification's resource reference is not on the service",
            "not trusted",
            "happens again",
            False,
        ),
    ],
)
def test_each_kind_of_failure_says_its_cause_and_what_to_do_with_retry_only_where_it_helps(
    staff, code, reason, cause, action, retry
):
    order = Order.objects.create(
        transaction_id="txn-kind", status=OrderStatus.FAILED, failure_code=code, failure_reason=reason
    )
    outcome = outcome_of(page_of(staff, order))
    assert cause in outcome and action in outcome
    assert ("Retry the order" in outcome) is retry
    assert "Error" not in outcome and "http" not in outcome


def test_a_retry_of_a_kind_it_cannot_help_is_not_offered_in_bulk_either(staff):
    """The list's action leaves alone what the page does not offer to retry (the lender must act)."""
    wrong = Order.objects.create(
        transaction_id="txn-wrong-creds",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.CREDENTIALS_INVALID,
        failure_reason="The password is wrong.",
    )
    outage = Order.objects.create(
        transaction_id="txn-outage",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason=OUTAGE,
    )
    done = staff.post(
        reverse("admin:fulfillment_order_changelist"),
        {"action": "retry", "_selected_action": [wrong.pk, outage.pk]},
        follow=True,
    ).content.decode()
    assert "1 order(s) sent back to work." in done
    wrong.refresh_from_db()
    outage.refresh_from_db()
    assert (wrong.status, outage.status) == (OrderStatus.FAILED, OrderStatus.VALIDATION_REQUESTED)


def test_the_page_says_who_ordered_it_shows_no_empty_section_and_a_history_in_staff_words(staff):
    from partner.catalog.models import PartnerAccount, PartnerCompany
    from partner.fulfillment.orders.history import step_record

    company = PartnerCompany.objects.create(name="Harbor Lending")
    account = PartnerAccount.objects.create(username="ann.lender", company=company)
    order = Order.objects.create(
        transaction_id="txn-history",
        status=OrderStatus.FAILED,
        failure_code=FailureCode.RETRIES_EXHAUSTED,
        failure_reason=OUTAGE,
        ordered_by=account,
        product_name="appraisal",
    )
    step_record(order, "opened", "http://svc/partner/v2/transactions/0b6f3c4e-1a2b-4c3d-9e8f-001122334455")
    step_record(order, "sent", "Acknowledgement (response version 2)")
    step_record(order, "failed", OUTAGE)
    step_record(order, "lender_told", "The order failed.")
    page = page_of(staff, order)

    assert "Ordered by ann.lender of Harbor Lending (appraisal)." in outcome_of(page)
    for empty in ("The request, as the lender sent it", "What the work found", "The response", "Documents"):
        assert f"<h2>{empty}</h2>" not in page and f"{empty}</h2>" not in page
    history = html.unescape(page.split('id="steps-heading"')[1])
    for words in ("Order arrived from the platform", "Sent to the lender", "Lender told of the failure"):
        assert words in history
    for api_word in ("lender_told", "response version", "0b6f3c4e", "http://svc"):
        assert api_word not in history


def test_the_orders_list_is_keyed_by_reference_product_company_and_state_in_words(staff):
    from partner.catalog.models import PartnerAccount, PartnerCompany

    account = PartnerAccount.objects.create(username="bo", company=PartnerCompany.objects.create(name="Bay Credit"))
    Order.objects.create(
        transaction_id="0b6f3c4e-1a2b-4c3d-9e8f-001122334455",
        reference_number="AP-2002",
        product_name="appraisal",
        status=OrderStatus.REQUEST_COMPLETED,
        ordered_by=account,
    )
    listing = staff.get(reverse("admin:fulfillment_order_changelist")).content.decode()
    table = listing.split('id="result_list"')[1].split("</table>")[0]
    head = table.split("</thead>")[0]
    for column in ("Reference", "Product", "Lender company", "State"):
        assert column in head
    assert "Resource id" not in head and "Attempts" not in head
    row = table.split("</thead>")[1]
    assert "AP-2002" in row and "Bay Credit" in row and "Completed" in row and "REQUEST_COMPLETED" not in row
    # The platform's id only inside the folded details.
    assert row.index("0b6f3c4e") > row.index("<details")
    page = page_of(staff, Order.objects.get(reference_number="AP-2002"))
    assert "REQUEST_COMPLETED" not in page.split("<title>")[1].split("</title>")[0]
