"""A connection's signing secrets rotated by the connector's rules (`services.signing_secret_add`,
`services.signing_secret_drop_oldest`), which the admin's actions call: a new secret after those
held, the oldest dropped, the only one always kept."""

import pytest

from partner.connector.models import Connection
from partner.connector.services import ConnectionRefused, signing_secret_add, signing_secret_drop_oldest

pytestmark = pytest.mark.django_db


def held(connection) -> list[str]:
    return Connection.objects.get(pk=connection.pk).secrets()


def test_a_new_secret_is_added_after_those_held_and_returned(connection):
    first = connection.created.signing_secret
    new = signing_secret_add(connection_id=connection.pk)
    assert new.startswith("whsec_") and new != first
    assert held(connection) == [first, new]  # events are signed with both until the oldest goes


def test_the_oldest_secret_is_dropped(connection):
    first = connection.created.signing_secret
    second = signing_secret_add(connection_id=connection.pk)
    third = signing_secret_add(connection_id=connection.pk)
    signing_secret_drop_oldest(connection_id=connection.pk)
    assert held(connection) == [second, third]
    assert first not in held(connection)


def test_the_only_secret_is_kept(connection):
    with pytest.raises(ConnectionRefused, match="acme-amc: its only secret is kept"):
        signing_secret_drop_oldest(connection_id=connection.pk)
    assert held(connection) == [connection.created.signing_secret]


def test_an_unknown_connection_is_refused():
    with pytest.raises(ConnectionRefused, match="No such connection"):
        signing_secret_add(connection_id=999_999)
    with pytest.raises(ConnectionRefused, match="No such connection"):
        signing_secret_drop_oldest(connection_id=999_999)
