"""An event's send ends by CONNECTOR_SEND_TIMEOUT whatever the endpoint does, and reads at most the
kept start of its answer: against real local servers that drip a byte a second (in the status line,
or in the body after a 200) and one that sends an endless chunked answer."""

import contextlib
import socket
import threading
import time

import pytest
from django.utils.dateparse import parse_datetime

from partner.connector import sending
from partner.connector.models import Connection, EventAttempt
from partner.core import outbound

pytestmark = pytest.mark.django_db(transaction=True)

WOULD_LAST = 60  # seconds the endpoint would hold a send that waited for all of it
ENDLESS_CAP = 256 * 1024 * 1024  # "endless": the stand-in stops there, so a failing test ends too
# A byte a second: each read well within the socket's timeout (the test settings' 2 s), so only a
# deadline for the whole exchange ends the send.


class Endpoint:
    """A TCP server answering each request by `behaviour(connection)`; counts the bytes it sent
    and notes when the client went away."""

    def __init__(self, behaviour):
        self.behaviour, self.sent, self.gone = behaviour, 0, threading.Event()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hooks"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        connection, _ = self.server.accept()
        connection.recv(65536)  # the request (small: one event)
        with contextlib.suppress(OSError):  # the client went away
            self.behaviour(self, connection)
        self.gone.set()
        connection.close()

    def send(self, connection, data: bytes):
        connection.sendall(data)
        self.sent += len(data)

    def close(self):
        self.server.close()


def drip(data: bytes):
    def behaviour(endpoint, connection):
        for byte in data[:WOULD_LAST]:
            endpoint.send(connection, bytes([byte]))
            time.sleep(1)

    return behaviour


def endless(endpoint, connection):
    endpoint.send(connection, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 65536
    started = time.monotonic()
    while time.monotonic() - started < WOULD_LAST and endpoint.sent < ENDLESS_CAP:
        endpoint.send(connection, b"%x\r\n%s\r\n" % (len(chunk), chunk))


def sent_to(endpoint, connection, tasks_sent):
    Connection.objects.filter(pk=connection.pk).update(endpoint_url=endpoint.url)
    tasks_sent.clear()
    sending.events_relay()
    [task] = [kwargs for name, kwargs in tasks_sent if name == sending.SEND_TASK]
    started = time.monotonic()
    delivered = sending.event_send(event_id=task["event_id"], lease_until=parse_datetime(task["lease_until"]))
    return delivered, time.monotonic() - started, EventAttempt.objects.get()


@pytest.fixture
def endpoints():
    made = []
    yield lambda behaviour: made.append(Endpoint(behaviour)) or made[-1]
    for endpoint in made:
        endpoint.close()


def test_a_status_line_dripped_a_byte_a_second_ends_at_the_deadline(order, connection, settings, tasks_sent, endpoints):
    settings.CONNECTOR_SEND_TIMEOUT = 2.0
    endpoint = endpoints(drip(b"HTTP/1.1 200 OK\r\nX-Padding: " + b"p" * WOULD_LAST + b"\r\n\r\n"))
    delivered, took, attempt = sent_to(endpoint, connection, tasks_sent)
    assert delivered is False and attempt.status_code is None and attempt.answer.startswith("Timeout")
    assert took < WOULD_LAST / 4  # the socket's timeout alone: a second per byte, all of them
    assert endpoint.gone.wait(10)


def test_a_body_dripped_after_the_status_ends_at_the_deadline_with_the_status(
    order, connection, settings, tasks_sent, endpoints
):
    settings.CONNECTOR_SEND_TIMEOUT = 2.0

    def behaviour(endpoint, connection):
        endpoint.send(connection, b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
        drip(b"y" * WOULD_LAST)(endpoint, connection)

    endpoint = endpoints(behaviour)
    delivered, took, attempt = sent_to(endpoint, connection, tasks_sent)
    assert delivered is True and attempt.status_code == 200  # the status came in time
    assert took < WOULD_LAST / 4 and set(attempt.answer) <= {"y"}
    assert endpoint.gone.wait(10)


def test_an_endless_chunked_answer_is_read_no_further_than_what_is_kept(
    order, connection, settings, tasks_sent, endpoints
):
    settings.CONNECTOR_SEND_TIMEOUT = 2.0
    endpoint = endpoints(endless)
    delivered, took, attempt = sent_to(endpoint, connection, tasks_sent)
    assert delivered is True and attempt.status_code == 200
    assert len(attempt.answer) <= outbound.KEPT and took < WOULD_LAST / 4
    assert endpoint.gone.wait(10)  # the connection was closed, not drained
    assert endpoint.sent < 64 * 1024 * 1024  # what the socket buffers took, not the endless answer
