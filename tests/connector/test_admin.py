"""The connector's admin: a connection made with its credentials shown once, its health, the events
and attempts of an order, replays, and the take-over of a connected order by hand (through the
admin's pages, the Django test client)."""

import pytest
from django.urls import reverse

from partner.catalog.fulfiller_keys import CONNECTED
from partner.connector.models import Connection, Event, EventAttempt, EventState
from partner.fulfillment.models import Order

pytestmark = pytest.mark.django_db


def test_a_connection_is_made_with_its_user_client_and_secret_shown_once(staff, connected_product):
    answer = staff.post(
        reverse("admin:connector_connection_add"),
        {
            "name": "title-desk",
            "endpoint_url": "https://title.example/hooks",
            "enabled": "on",
            "event_types": "[]",
            "products": [connected_product.pk],
            "notify_email": "",
        },
        follow=True,
    )
    connection = Connection.objects.get(name="title-desk")
    assert connection.user.username == "system.title-desk" and connection.application is not None
    [secret] = connection.secrets()
    page = answer.content.decode()
    assert secret in page and "client secret" in page  # once, on creation
    # labelled fields, and an environment snippet to paste
    assert f'<code class="connection-secret" data-name="SIGNING_SECRET">{secret}</code>' in page
    assert f"SIGNING_SECRET={secret}" in page and f"CLIENT_ID={connection.application.client_id}" in page
    # in that answer alone: never in the messages cookie (signed, not encrypted), never cached
    assert answer.redirect_chain == [] and "no-store" in answer["Cache-Control"]
    assert all(secret not in cookie.value for cookie in staff.cookies.values())
    change = staff.get(reverse("admin:connector_connection_change", args=[connection.pk])).content.decode()
    assert secret not in change and "1 held" in change
    assert connection.application.client_id in change


@pytest.mark.parametrize(
    ("endpoint_url", "event_types", "error"),
    [
        ("http://title.example/hooks", "[]", "must be an https address"),
        ("https://title.example/hooks", '["order.created", "order.exploded"]', "Unknown event type(s): order.exploded"),
    ],
)
def test_a_connection_in_clear_or_asking_for_unknown_events_is_refused(
    staff, connected_product, endpoint_url, event_types, error
):
    answer = staff.post(
        reverse("admin:connector_connection_add"),
        {
            "name": "title-desk",
            "endpoint_url": endpoint_url,
            "enabled": "on",
            "event_types": event_types,
            "products": [connected_product.pk],
            "notify_email": "",
        },
    )
    assert answer.status_code == 200 and error in answer.content.decode()
    assert not Connection.objects.filter(name="title-desk").exists()


def test_an_endpoint_on_the_loopback_is_allowed_only_beside_the_sandbox(settings):
    from partner.connector.services import endpoint_problem

    settings.SANDBOX_ENABLED = True
    assert endpoint_problem("http://127.0.0.1:8199/events") is None
    assert endpoint_problem("http://receiver.example/events") is not None
    settings.SANDBOX_ENABLED = False
    assert endpoint_problem("http://127.0.0.1:8199/events") is not None
    assert endpoint_problem("https://receiver.example/events") is None
    assert endpoint_problem("") is None  # a connection that pulls the feed


def test_the_health_and_the_events_and_attempts_of_an_order(staff, order, connection):
    event = Event.objects.get(order=order)
    Event.objects.filter(pk=event.pk).update(state=EventState.FAILED, attempts=3, last_error="status 500")
    EventAttempt.objects.create(
        event=event, started_at=event.created_at, status_code=500, answer="oops", duration_ms=12
    )
    Connection.objects.filter(pk=connection.pk).update(
        enabled=False, disabled_reason="order.created failed", consecutive_failures=3
    )
    listing = staff.get(reverse("admin:connector_connection_changelist")).content.decode()
    assert "disabled" in listing
    page = staff.get(reverse("admin:connector_connection_change", args=[connection.pk])).content.decode()
    assert "Failures in a row" in page and "order.created failed" in page and "Events failed" in page
    order_page = staff.get(reverse("admin:connector_connectedorder_change", args=[order.pk])).content.decode()
    assert "order.created" in order_page and "500 in 12 ms" in order_page
    attempts = staff.get(reverse("admin:connector_event_change", args=[event.pk])).content.decode()
    assert "oops" in attempts

    staff.post(
        reverse("admin:connector_connection_changelist"),
        {"action": "replay_failed", "_selected_action": [connection.pk]},
    )
    assert Event.objects.get(pk=event.pk).state == EventState.PENDING


def test_staff_take_a_connected_order_over_by_hand(staff, order, connection):
    page = reverse("admin:connector_connectedorder_change", args=[order.pk])
    asked = staff.post(page, {"_take_over": "1"}, follow=True)  # one click only asks
    assert asked.status_code == 200 and "Yes, take it over" in asked.content.decode()
    assert Order.objects.get(pk=order.pk).assigned_to == connection.user
    answer = staff.post(page, {"_take_over_confirmed": "1"})
    assert answer.status_code == 302 and answer["Location"] == reverse(
        "admin:fulfillment_stafforder_change", args=[order.pk]
    )
    order = Order.objects.get(pk=order.pk)
    assert order.assigned_to.username == "staff" and order.status == "WITH_STAFF"
    assert [e.type for e in Event.objects.filter(order=order).order_by("pk")] == ["order.created", "order.taken_over"]


def test_a_connection_never_contacted_is_not_called_healthy(staff, connection):
    from django.utils import timezone

    listing = staff.get(reverse("admin:connector_connection_changelist")).content.decode()
    assert "not contacted yet" in listing and "healthy" not in listing
    now = timezone.now()
    Connection.objects.filter(pk=connection.pk).update(last_success_at=now)
    listing = staff.get(reverse("admin:connector_connection_changelist")).content.decode()
    assert "healthy" in listing and "UTC (0" in listing  # "… UTC (0 minutes ago)"
    assert str(now) not in listing


def test_a_disabled_connection_is_a_readiness_warning(connection):
    from partner.core.health import health_warnings

    assert not any("acme-amc" in w for w in health_warnings(ready=True))
    Connection.objects.filter(pk=connection.pk).update(enabled=False)
    assert "connection acme-amc is disabled: its events wait (see the connector's admin)" in health_warnings(ready=True)


def test_the_demo_connection_is_refused_outside_debug_and_idempotent(settings, connected_product):
    from django.core.management import CommandError, call_command

    from partner.catalog.models import Product
    from partner.connector.services import DEMO_CLIENT_ID

    Product.objects.filter(pk=connected_product.pk).update(fulfiller="staff_worked")
    settings.DEBUG = False
    with pytest.raises(CommandError, match="public"):
        call_command("connection_demo", "appraisal")
    settings.DEBUG = True
    call_command("connection_demo", "appraisal")
    call_command("connection_demo", "appraisal")
    [connection] = Connection.objects.filter(name="demo-order-system")
    assert connection.application.client_id == DEMO_CLIENT_ID
    assert Product.objects.get(pk=connected_product.pk).fulfiller == CONNECTED


def test_staff_replay_everything_since_a_time(staff, order, connection):
    Event.objects.filter(order=order).update(state=EventState.DELIVERED)
    answer = staff.post(
        reverse("admin:connector_connection_changelist"),
        {"action": "replay_since", "_selected_action": [connection.pk], "since": "2000-01-01 00:00"},
        follow=True,
    )
    assert "1 event(s) will be sent again, oldest first." in answer.content.decode()
    assert Event.objects.get(order=order).state == EventState.PENDING


def test_a_rotation_s_new_secret_is_shown_in_its_answer_alone(staff, connection):
    answer = staff.post(
        reverse("admin:connector_connection_changelist"),
        {"action": "secret_add", "_selected_action": [connection.pk]},
    )
    old, new = Connection.objects.get(pk=connection.pk).secrets()
    page = answer.content.decode()
    assert answer.status_code == 200 and new in page and old not in page
    assert "no-store" in answer["Cache-Control"]
    assert all(new not in cookie.value for cookie in staff.cookies.values())
    assert new not in staff.get(reverse("admin:connector_connection_changelist")).content.decode()
