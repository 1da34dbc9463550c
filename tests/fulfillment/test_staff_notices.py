"""Staff's e-mails are never lost: sent by a task that retries, marked sent only once the mail server
took them, enqueued again by the periodic pass when a task gave up; a listing name with a line break
does not break them.

The mail server is a real one on a local port (`tests/helpers/smtp.py`) that turns connections away
with 421 at first; the task runs on a real Celery worker where the retry is the point.
"""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone

from partner.fulfillment.enqueue import STAFF_NOTICE_TASK
from partner.fulfillment.models import Order, OrderStatus
from partner.fulfillment.staff import notices
from tests.helpers.products import product_create
from tests.helpers.smtp import SmtpServer, mail_server_use
from tests.helpers.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

REQUEST = {
    "type": "NEW_REQUEST",
    "loan": {
        "loanNumber": "LN-NOTICE-1",
        "borrower": {"firstName": "Dana", "lastName": "Whitfield"},
        "property": {"streetAddress": "12 Elm Street", "city": "Austin", "state": "TX", "postalCode": "78701"},
    },
}


@pytest.fixture
def smtp_settings(settings):
    def point(server: SmtpServer):
        mail_server_use(settings, server)

    settings.PUBLIC_BASE_URL = "https://partner.example"
    settings.CELERY_TASK_RETRY_BACKOFF = 0.2  # the retry rule's waits, short for the test
    return point


def open_order(listing_name="Residential appraisal") -> Order:
    product = product_create(
        name="appraisal",
        fulfiller="staff_worked",
        staff_email="appraisals@partner.example",
        listing_name=listing_name,
        credentials=False,
    )
    return Order.objects.create(
        transaction_id=f"txn-notice-{timezone.now().timestamp()}",
        product_name=product.name,
        status=OrderStatus.WITH_STAFF,
        staff_worked=True,
        reference_number="OR-NOTICE-1",
        loan_number="LN-NOTICE-1",
        request=REQUEST,
        due_at=timezone.now() + timedelta(hours=48),
    )


@pytest.mark.worker
def test_a_failing_send_is_retried_by_the_task_and_marked_only_once_sent(smtp_settings, celery_worker_live):
    order = open_order()
    with SmtpServer(refuse=2) as server:
        smtp_settings(server)
        assert notices.staff_notice_request(order, notices.NEW_ORDER)
        wait_for(
            lambda: Order.objects.get(pk=order.pk).staff_notified_at is not None,
            timeout=120,  # a wait, not a timing assertion: the worker may start slowly on a busy machine
            message="the new-order notice marked sent",
        )
    assert server.connections == 3  # turned away twice, sent on the third attempt
    [message] = server.messages
    assert message["To"] == "appraisals@partner.example"
    assert message["Subject"].startswith("New order") and "Austin, TX" in message["Subject"]


def test_a_notice_whose_retries_are_spent_is_not_lost(smtp_settings, tasks_sent):
    order = open_order()
    Order.objects.filter(pk=order.pk).update(created_at=timezone.now() - timedelta(hours=1))
    order.refresh_from_db()
    with SmtpServer(refuse=1) as server:
        smtp_settings(server)
        with pytest.raises(Exception, match="421"):  # what the task's retry rule gets
            notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER)
        order.refresh_from_db()
        assert order.staff_notified_at is None  # not marked: still owed
        # The periodic pass enqueues it again (its earlier task's pending window passed).
        cache.delete(f"staff-notice:{notices.NEW_ORDER}:{order.pk}:{order.created_at.timestamp():.6f}")
        assert notices.notices_due() == 1
        assert tasks_sent == [(STAFF_NOTICE_TASK, {"order_id": order.pk, "notice": notices.NEW_ORDER})]
        assert notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER)
    assert len(server.messages) == 1
    order.refresh_from_db()
    assert order.staff_notified_at is not None
    assert notices.notices_due() == 0


def test_a_past_due_notice_is_marked_only_once_sent(smtp_settings, tasks_sent):
    order = open_order()
    Order.objects.filter(pk=order.pk).update(
        due_at=timezone.now() - timedelta(minutes=5), staff_notified_at=timezone.now()
    )
    with SmtpServer(refuse=1) as server:
        smtp_settings(server)
        assert notices.notices_due() == 1
        with pytest.raises(Exception, match="421"):
            notices.staff_notice_send(order_id=order.pk, notice=notices.PAST_DUE)
        assert Order.objects.get(pk=order.pk).overdue_notified_at is None
        assert notices.staff_notice_send(order_id=order.pk, notice=notices.PAST_DUE)
    assert Order.objects.get(pk=order.pk).overdue_notified_at is not None
    assert server.messages[0]["Subject"].startswith("Order past due")


def test_a_listing_name_with_a_line_break_still_gives_a_one_line_subject(smtp_settings, tasks_sent):
    order = open_order(listing_name="Residential\r\nappraisal")  # stored by hand: cleaned where it enters
    with SmtpServer() as server:
        smtp_settings(server)
        assert notices.staff_notice_send(order_id=order.pk, notice=notices.NEW_ORDER)
    [message] = server.messages
    assert message["Subject"].startswith("New order - Residential appraisal - OR-NOTICE-1")
    for private in ("Whitfield", "Dana", "Elm Street", "78701"):
        assert private not in message.as_string()


def test_the_cache_away_does_not_stop_a_notice(settings, tasks_sent):
    """The sender asks for the new-order notice inside the transaction that records its PATCH: a cache
    that does not answer must neither fail that transaction nor lose the notice."""
    order = open_order()
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    assert notices.staff_notice_request(order, notices.NEW_ORDER)
    assert tasks_sent == [(STAFF_NOTICE_TASK, {"order_id": order.pk, "notice": notices.NEW_ORDER})]
