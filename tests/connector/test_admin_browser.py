"""The connector's admin in Chromium: a connection's page shows its health, leads to its events and
their attempts, and a connected order is taken over by hand once confirmed. Screenshots in
test-artifacts/ui/."""

import pytest
from django.urls import reverse
from django.utils import timezone
from playwright.sync_api import expect

from partner.connector.models import Connection, Event, EventAttempt, EventState
from partner.fulfillment.models import Order

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_connection_page_shows_health_events_and_attempts(live_server, signed_in, shot, order, connection):
    page = signed_in
    event = Event.objects.get(order=order)
    Event.objects.filter(pk=event.pk).update(attempts=2, last_error="status 503")
    EventAttempt.objects.create(event=event, started_at=timezone.now(), status_code=503, answer="busy", duration_ms=40)
    Connection.objects.filter(pk=connection.pk).update(failing_since=timezone.now(), consecutive_failures=2)

    page.goto(live_server.url + reverse("admin:connector_connection_changelist"))
    assert "failing" in page.locator("#result_list").inner_text()
    page.get_by_role("link", name="acme-amc").click()
    page.wait_for_url(f"**{reverse('admin:connector_connection_change', args=[connection.pk])}")
    health = page.locator("table.connection-health")
    text = health.inner_text()
    assert "Failures in a row\t2" in text and "Events waiting\t1" in text
    assert "ago)" in text and "+00:00" not in text  # times for people: "… UTC (3 minutes ago)"
    shot("connector-connection-health")
    assert "whsec_" not in page.content()

    page.get_by_role("link", name="Its events and their attempts").click()
    page.wait_for_url("**/connector/event/?*")
    assert "order.created" in page.locator("#result_list").inner_text()
    page.locator("#result_list tbody th a").first.click()
    # The click starts the event's page loading: wait for its attempts before reading the page.
    expect(page.locator(".inline-group")).to_contain_text("503")
    assert "busy" in page.content()
    shot("connector-event-attempts")

    page.goto(live_server.url + reverse("admin:connector_connectedorder_change", args=[order.pk]))
    assert "503 in 40 ms" in page.locator(".inline-group").inner_text()
    page.get_by_role("button", name="Take over by hand").click()
    expect(page.locator(".take-over-confirm")).to_contain_text("system.acme-amc")  # asked first
    assert Order.objects.get(pk=order.pk).assigned_to == connection.user
    shot("connector-take-over-confirm")
    page.get_by_role("button", name="Yes, take it over").click()
    page.wait_for_url(f"**{reverse('admin:fulfillment_stafforder_change', args=[order.pk])}")
    assert Order.objects.get(pk=order.pk).assigned_to.username == "staff"
    assert Event.objects.filter(order=order, type="order.taken_over", state=EventState.PENDING).exists()


def test_a_new_connection_s_secrets_are_labelled_and_copied_with_a_click(
    live_server, signed_in, shot, connected_product
):
    page = signed_in
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page.goto(live_server.url + reverse("admin:connector_connection_add"))
    page.fill("#id_name", "title-desk")
    page.fill("#id_endpoint_url", "https://title.example/hooks")
    page.get_by_role("button", name="Save", exact=True).click()
    secrets = page.locator("dl.connection-secrets")
    expect(secrets).to_contain_text("Signing secret")
    [signing] = Connection.objects.get(name="title-desk").secrets()
    shot("connector-secrets-once")
    page.get_by_role("button", name="Copy SIGNING_SECRET").click()
    assert page.evaluate("navigator.clipboard.readText()") == signing
    page.get_by_role("button", name="Copy the environment variables").click()
    assert f"SIGNING_SECRET={signing}" in page.evaluate("navigator.clipboard.readText()")
