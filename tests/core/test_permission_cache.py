"""Staff permissions kept in the shared cache between requests (partner/core/permission_cache.py): read
from the database once, not on every request, and a change to who holds which permission seen at the
next request."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from redis.exceptions import ConnectionError as RedisConnectionError

from partner.core import permission_cache
from partner.core.staff_accounts import ORDER_STAFF_GROUP, staff_account_set

# Committed for real: a new generation starts when a change commits (transaction.on_commit).
pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "admin:fulfillment_stafforder_changelist"


@pytest.fixture
def order_staff():
    user, _ = staff_account_set(username="clerk", password="Clerk-password-2026!")
    client = Client()
    client.force_login(user)
    return user, client


def permission_queries(client) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(reverse(QUEUE)).status_code == 200
    return [query["sql"] for query in queries.captured_queries if "auth_permission" in query["sql"]]


def test_order_staff_s_permissions_are_read_from_the_database_once(order_staff):
    _, client = order_staff
    assert len(permission_queries(client)) == 2  # their own, their groups'
    assert permission_queries(client) == []
    assert permission_queries(client) == []


@pytest.mark.parametrize(
    "change",
    [
        lambda user: user.groups.remove(Group.objects.get(name=ORDER_STAFF_GROUP)),
        lambda user: user.groups.clear(),
        lambda user: Group.objects.get(name=ORDER_STAFF_GROUP).permissions.clear(),
        lambda user: Group.objects.get(name=ORDER_STAFF_GROUP).user_set.remove(user),
        lambda user: Group.objects.get(name=ORDER_STAFF_GROUP).delete(),
        lambda user: Permission.objects.filter(codename__endswith="order").delete(),
    ],
    ids=[
        "left the group",
        "left every group",
        "group lost its permissions",
        "group dropped them",
        "group deleted",
        "permissions deleted",
    ],
)
def test_a_permission_taken_away_is_refused_at_the_next_request(order_staff, change):
    user, client = order_staff
    assert client.get(reverse(QUEUE)).status_code == 200
    change(user)
    assert client.get(reverse(QUEUE)).status_code == 403


def test_a_permission_given_is_granted_at_the_next_request(order_staff):
    user, client = order_staff
    user.groups.clear()
    assert client.get(reverse(QUEUE)).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_order"))
    assert client.get(reverse(QUEUE)).status_code == 200


def test_the_database_answers_when_the_cache_does_not(order_staff, monkeypatch):
    _, client = order_staff

    def refused(*args, **kwargs):
        raise RedisConnectionError("the cache is away")

    monkeypatch.setattr(permission_cache.cache, "get_many", refused)
    assert len(permission_queries(client)) == 2
    assert len(permission_queries(client)) == 2
