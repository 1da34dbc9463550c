"""The `staff_account` command: an admin login that works orders, in the order staff's group, never a
superuser; the demo password is refused with DEBUG off (partner/core/staff_accounts.py)."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from partner.core.demo_values import DEMO_STAFF_PASSWORD

STAFF_PERMISSIONS = {
    "fulfillment.view_order",
    "fulfillment.change_order",
    "fulfillment.view_delivery",
    "fulfillment.change_delivery",
    "inbox.view_notification",
    "inbox.change_notification",
}


def staff_account(username, password, *args):
    out = io.StringIO()
    call_command("staff_account", username, *args, stdin=io.StringIO(password + "\n"), stdout=out)
    return out.getvalue()


def test_staff_account_creates_an_order_staff_login_not_a_superuser(db, client, settings):
    settings.DEBUG = True  # the demo password, in a local run
    assert "Created" in staff_account("staff.demo", DEMO_STAFF_PASSWORD, "--email", "staff.demo@partner.example")
    user = get_user_model().objects.get(username="staff.demo")
    assert user.is_staff and user.is_active and not user.is_superuser
    assert user.email == "staff.demo@partner.example"
    permissions = user.get_all_permissions()
    assert permissions >= STAFF_PERMISSIONS
    assert {p.split(".")[0] for p in permissions} == {"fulfillment", "inbox", "connector"}
    assert not any(p.split(".")[1].startswith(("add_", "delete_")) for p in permissions)
    # the connector's pages are read (and a connected order taken over), never a connection changed
    assert {p for p in permissions if p.startswith("connector.")} == {
        "connector.view_connection",
        "connector.view_event",
        "connector.view_eventattempt",
        "connector.view_idempotentanswer",
        "connector.view_connectedorder",
        "connector.take_over_connectedorder",
    }

    assert client.login(username="staff.demo", password=DEMO_STAFF_PASSWORD)
    assert client.get(reverse("admin:fulfillment_order_changelist")).status_code == 200
    assert client.get(reverse("admin:inbox_notification_changelist")).status_code == 200
    assert client.get(reverse("admin:catalog_product_changelist")).status_code == 403
    connections = client.get(reverse("admin:connector_connection_changelist"))
    assert connections.status_code == 200 and "secret_add" not in connections.content.decode()
    assert client.get(reverse("admin:connector_connectedorder_changelist")).status_code == 200


def test_staff_account_updates_the_same_login(db):
    staff_account("ann.appraiser", "first-password-9x")
    first = get_user_model().objects.get(username="ann.appraiser")
    assert "Updated" in staff_account("ann.appraiser", "second-password-9x")
    again = get_user_model().objects.get(username="ann.appraiser")
    assert again.pk == first.pk and again.check_password("second-password-9x")
    call_command("staff_account", "ann.appraiser", stdin=io.StringIO(""), stdout=io.StringIO())  # keeps it
    again.refresh_from_db()
    assert again.check_password("second-password-9x") and again.groups.count() == 1


def test_staff_account_refuses_the_demo_password_with_debug_off(db, settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="demo staff password"):
        staff_account("staff.demo", DEMO_STAFF_PASSWORD)
    assert not get_user_model().objects.filter(username="staff.demo").exists()
    staff_account("staff.demo", "a-private-password-7q")
    with pytest.raises(CommandError, match="demo staff password"):
        staff_account("staff.demo", DEMO_STAFF_PASSWORD)  # nor as a new password of an existing login
    assert get_user_model().objects.get(username="staff.demo").check_password("a-private-password-7q")


def test_staff_account_refuses_a_superuser_and_a_new_login_without_password(db, django_user_model):
    django_user_model.objects.create_superuser("root", "root@partner.example", "root-password-1x")
    with pytest.raises(CommandError, match="superuser"):
        staff_account("root", "another-password-9x")
    assert django_user_model.objects.get(username="root").is_superuser
    with pytest.raises(CommandError, match="needs a password"):
        call_command("staff_account", "nobody.yet", stdin=io.StringIO(""), stdout=io.StringIO())


def test_a_rerun_that_keeps_the_login_still_brings_the_group_s_permissions_up_to_date(db, settings):
    from django.contrib.auth.models import Group

    from partner.core.staff_accounts import ORDER_STAFF_GROUP

    settings.DEBUG = True
    staff_account("staff.demo", DEMO_STAFF_PASSWORD)
    group = Group.objects.get(name=ORDER_STAFF_GROUP)
    group.permissions.remove(*group.permissions.filter(content_type__app_label="connector"))
    staff_account("staff.demo", "", "--keep-existing")  # make run again, after an upgrade
    user = get_user_model().objects.get(username="staff.demo")
    assert user.has_perm("connector.view_connectedorder")
