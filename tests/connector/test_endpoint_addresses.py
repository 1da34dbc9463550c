"""A connection's endpoint is held to the upload locations' address rule: loopback, private,
link-local, shared and cloud metadata addresses are refused at saving, and at sending on every
address the host resolves to and on the connected peer (a name that resolves elsewhere by the time
of the send, DNS rebinding, is refused too, and nothing reaches it). A setting allows named private
networks, never a metadata address. The try says why in plain words."""

import socket

import pytest
from django.utils.dateparse import parse_datetime

from partner.connector import sending
from partner.connector.models import Connection, EventAttempt
from partner.connector.services import ConnectionRefused, connection_create, endpoint_problem
from tests.helpers.connector import OrderSystem

REFUSED = "The endpoint's address is"
REBOUND = "rebind.test"  # a name our stand-in resolver answers with this machine's loopback


@pytest.fixture
def resolver(monkeypatch):
    """Names of the tests resolved as given; any other as the system does."""
    names = {REBOUND: "127.0.0.1", "inside.test": "10.9.8.7"}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in names:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (names[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return names


@pytest.mark.parametrize(
    "url, reason",
    [
        ("https://10.1.2.3/hooks", "a private address"),
        ("https://127.0.0.1:8443/hooks", "a loopback address"),
        ("https://169.254.169.254/latest/meta-data", "a cloud metadata address"),
        ("https://[::ffff:192.168.1.1]/hooks", "a private address"),
        ("https://100.64.0.1/hooks", "not a public address"),
        ("https://inside.test/hooks", "a private address"),  # a name, resolved
    ],
)
def test_saving_refuses_an_endpoint_inside_our_networks(url, reason, settings, resolver):
    settings.SANDBOX_ENABLED = False
    assert endpoint_problem(url).startswith(f"{REFUSED} {reason}")


def test_a_public_address_is_accepted(settings):
    settings.SANDBOX_ENABLED = False
    assert endpoint_problem("https://93.184.215.14/hooks") is None


@pytest.mark.django_db
def test_a_connection_to_a_private_address_is_not_made(connected_product, settings):
    settings.SANDBOX_ENABLED = False
    with pytest.raises(ConnectionRefused, match=REFUSED):
        connection_create(name="inside", endpoint_url="https://10.1.2.3/hooks", products=[connected_product])
    assert not Connection.objects.exists()


def test_named_private_networks_are_allowed_but_never_a_metadata_address(settings):
    settings.SANDBOX_ENABLED = False
    settings.CONNECTOR_ENDPOINT_NETWORKS = ["10.20.0.0/16", "169.254.0.0/16"]
    assert endpoint_problem("https://10.20.1.1/hooks") is None
    assert endpoint_problem("https://169.254.1.1/hooks") is None
    assert endpoint_problem("https://10.21.0.1/hooks").startswith(f"{REFUSED} a private address")
    assert endpoint_problem("https://169.254.169.254/").startswith(f"{REFUSED} a cloud metadata address")


@pytest.fixture
def rebound(connection, settings, monkeypatch, resolver):
    """A connection whose endpoint's name was public when checked and resolves to our loopback now."""
    system = OrderSystem(connection.created.signing_secret)
    url = system.url.replace("127.0.0.1", REBOUND)
    Connection.objects.filter(pk=connection.pk).update(endpoint_url=url)
    settings.SANDBOX_ENABLED = False  # no loopback allowance: production's rule
    monkeypatch.setattr(sending, "endpoint_problem", lambda url: None)  # the check before the send passed
    yield system
    system.close()


def sent(tasks_sent):
    tasks_sent.clear()
    sending.events_relay()
    [task] = [kwargs for name, kwargs in tasks_sent if name == sending.SEND_TASK]
    return sending.event_send(event_id=task["event_id"], lease_until=parse_datetime(task["lease_until"]))


@pytest.mark.django_db(transaction=True)
def test_a_name_rebound_to_our_network_by_the_send_is_refused_at_connect(order, rebound, tasks_sent):
    assert sent(tasks_sent) is False
    assert rebound.posts == 0
    [attempt] = EventAttempt.objects.all()
    assert attempt.status_code is None
    assert attempt.answer == "refused: the host's address is a loopback address; nothing was sent"


@pytest.mark.django_db(transaction=True)
def test_a_named_network_is_sent_to_at_the_address_checked(order, rebound, settings, tasks_sent):
    settings.CONNECTOR_ENDPOINT_NETWORKS = ["127.0.0.0/8"]
    assert sent(tasks_sent) is True
    assert rebound.posts == 1
