"""Where a borrower's document may be uploaded (partner/platform/locations.py).

The rule on its own (strict: https and public addresses only, judged on what the host resolves
to; not strict: local runs; the allow-list in both), then `upload_resource` and the pipeline
refusing a bad location without opening a connection, and the settings that choose the mode.
DNS is faked: host names resolve through the `dns` fixture, never through a real name server.
"""

import socket

import pytest

from partner.fulfillment.models import FailureCode, OrderStatus
from partner.fulfillment.orders.services import order_open
from partner.platform import client
from partner.platform.errors import RequestRefused, ServiceError, ServiceUnavailableError
from partner.platform.locations import UploadLocationRefusedError, upload_location_check
from partner.platform.types import UploadSlot
from tests.helpers.orders import order_ran
from tests.helpers.processes import PRODUCTION, SETTINGS, run_django
from tests.helpers.products import LENDER_CREDENTIALS, product_create
from tests.helpers.servers import Reply

REAL_UPLOAD_RESOURCE = client.upload_resource  # before any fake of the client replaces it
PUBLIC_V4, PUBLIC_V6 = "93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"
LOAN = {
    "property": {
        "streetAddress": "500 Howard Street",
        "city": "San Francisco",
        "state": "CA",
        "postalCode": "94105",
        "county": "San Francisco",
    }
}


class FakeDns:
    """socket.getaddrinfo for the names a test gives; literal addresses as the real resolver parses them."""

    def __init__(self, real):
        self.real = real
        self.names: dict[str, list[str]] = {}
        self.asked: list[str] = []

    def __call__(self, host, port, family=0, type=0, proto=0, flags=0):
        self.asked.append(host)
        if host in self.names:
            return [
                (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
                for a in self.names[host]
            ]
        # Never the network: only numeric forms ("127.1", "2130706433") resolve, as the C library parses them.
        return self.real(host, port, family, type, proto, flags | socket.AI_NUMERICHOST)


@pytest.fixture
def dns(monkeypatch):
    fake = FakeDns(socket.getaddrinfo)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    return fake


@pytest.fixture
def strict(settings, dns):
    """Production's mode (DJANGO_DEBUG off), which the test settings (DJANGO_DEBUG on) do not have."""
    settings.SVC_UPLOAD_LOCATION_STRICT = True
    settings.SVC_UPLOAD_HOSTS = []
    return dns


@pytest.fixture
def local(settings, dns):
    settings.SVC_UPLOAD_LOCATION_STRICT = False
    settings.SVC_UPLOAD_HOSTS = []
    return dns


def refusal(location) -> str:
    with pytest.raises(UploadLocationRefusedError) as caught:
        upload_location_check(location)
    return str(caught.value)


# strict: https, and public addresses only ---------------------------------------------------------------------------
def test_strict_requires_https(strict):
    strict.names["uploads.example.com"] = [PUBLIC_V4]
    assert "not https" in refusal("http://uploads.example.com/r1")
    upload_location_check("https://uploads.example.com/r1")


@pytest.mark.parametrize(
    ("host", "words"),
    [
        ("127.0.0.1", "loopback"),
        ("127.10.20.30", "loopback"),
        ("[::1]", "loopback"),
        ("10.0.0.7", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.1.20", "private"),
        ("169.254.169.254", "cloud metadata"),
        ("169.254.10.1", "link-local"),
        ("[fe80::1]", "link-local"),
        ("[fd00:ec2::254]", "cloud metadata"),
        ("[fd12:3456::1]", "private"),
        ("100.100.100.200", "cloud metadata"),
        ("168.63.129.16", "cloud metadata"),  # Azure's WireServer: a public address
        ("100.64.0.1", "not a public address"),
        ("[::ffff:127.0.0.1]", "loopback"),
        ("[::ffff:10.0.0.1]", "private"),
        ("[::ffff:169.254.169.254]", "cloud metadata"),
        ("[2002:7f00:1::]", "loopback address (in a 6to4 address)"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - a location, not a bind
        ("[::]", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("[ff02::1]", "multicast"),
        ("240.0.0.1", "reserved"),
        ("127.1", "127.1 resolves to 127.0.0.1, a loopback address"),  # the C library's short forms
        ("2130706433", "resolves to 127.0.0.1, a loopback address"),
    ],
)
def test_strict_refuses_addresses_that_are_not_public(strict, host, words):
    message = refusal(f"https://{host}/upload/r1")
    assert "upload location refused" in message and words in message


def test_strict_refuses_a_name_that_resolves_to_a_private_address(strict):
    strict.names["uploads.example.com"] = ["10.0.0.7"]
    message = refusal("https://uploads.example.com/r1")
    assert "uploads.example.com resolves to 10.0.0.7, a private address" in message
    assert strict.asked == ["uploads.example.com"]


def test_strict_refuses_a_name_when_any_of_its_addresses_is_not_public(strict):
    strict.names["uploads.example.com"] = [PUBLIC_V4, PUBLIC_V6, "fd00:ec2::254"]
    assert "cloud metadata" in refusal("https://uploads.example.com/r1")


def test_strict_accepts_public_addresses(strict):
    strict.names["uploads.example.com"] = [PUBLIC_V4, PUBLIC_V6]
    upload_location_check("https://uploads.example.com/r1?signature=abc")
    upload_location_check("https://UPLOADS.example.com.:8443/r1")  # any port, case and trailing dot
    upload_location_check(f"https://{PUBLIC_V4}/r1")
    upload_location_check(f"https://[{PUBLIC_V6}]/r1")
    upload_location_check(f"https://[::ffff:{PUBLIC_V4}]/r1")  # judged as the IPv4 address it carries


def test_a_name_that_does_not_resolve_is_transient_not_refused(strict):
    with pytest.raises(ServiceUnavailableError) as caught:
        upload_location_check("https://no-such-host.invalid/r1")
    assert caught.value.transient


def test_the_refusal_is_permanent_and_shows_no_query(strict):
    with pytest.raises(UploadLocationRefusedError) as caught:
        upload_location_check("https://10.0.0.7/r1?X-Signature=secret-signature-value")
    error = caught.value
    assert isinstance(error, RequestRefused) and not isinstance(error, ServiceError) and not error.transient
    assert error.method == "PUT" and error.url == "https://10.0.0.7/r1"
    assert "secret-signature-value" not in str(error)


@pytest.mark.parametrize(
    ("location", "words"),
    [
        ("file:///etc/passwd", "not an http(s) URL"),
        ("ftp://uploads.example.com/r1", "not an http(s) URL"),
        ("https:///r1", "not an http(s) URL"),
        ("https://uploads.example.com:99999/r1", "not a URL"),
        ("https://user:pw@uploads.example.com/r1", "carries user info"),
        (None, "not a URL"),
    ],
)
def test_what_is_not_an_upload_url_is_refused_in_every_mode(settings, dns, location, words):
    dns.names["uploads.example.com"] = [PUBLIC_V4]
    for strict_mode in (True, False):
        settings.SVC_UPLOAD_LOCATION_STRICT = strict_mode
        message = refusal(location)
        assert words in message
        assert "pw@" not in message


# not strict: local runs ---------------------------------------------------------------------------------------------
def test_local_runs_allow_http_and_loopback_without_resolving(local):
    upload_location_check("http://127.0.0.1:8000/sandbox/uploads/r1")
    upload_location_check("http://localhost:8000/sandbox/uploads/r1")
    upload_location_check("https://[::1]:8443/r1")
    assert local.asked == []


# the allow-list -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("strict_mode", [True, False])
def test_the_allow_list_applies_in_every_mode(settings, dns, strict_mode):
    settings.SVC_UPLOAD_LOCATION_STRICT = strict_mode
    settings.SVC_UPLOAD_HOSTS = ["uploads.example.com", ".blob.example.net", "127.0.0.1"]
    for host in ("uploads.example.com", "blob.example.net", "a.b.blob.example.net", "evil.example.org"):
        dns.names[host] = [PUBLIC_V4]
    for allowed in ("uploads.example.com", "Uploads.Example.com.", "blob.example.net", "a.b.blob.example.net"):
        upload_location_check(f"https://{allowed}/r1")
    for other in ("evil.example.org", "x.uploads.example.com", "evilblob.example.net", "example.net"):
        message = refusal(f"https://{other}/r1")
        assert f"host {other} is not named in SVC_UPLOAD_HOSTS" in message
    assert "x.uploads.example.com" not in dns.asked  # refused before any resolution
    # Named, yet still judged by its address when strict.
    if strict_mode:
        assert "loopback" in refusal("https://127.0.0.1/r1")
    else:
        upload_location_check("http://127.0.0.1:8000/sandbox/uploads/r1")


# upload_resource and the pipeline: refused before any connection ----------------------------------------------------
@pytest.fixture
def connections(fake, monkeypatch):
    """The connections the local server accepted (the request handler only sees the ones that parse)."""
    accepted = []

    def verify_request(request, client_address):
        accepted.append(client_address)
        return True

    monkeypatch.setattr(fake.httpd, "verify_request", verify_request)
    return accepted


def slot_at(location: str) -> UploadSlot:
    return UploadSlot(
        id="r1", name="report.pdf", mime_type="application/pdf", location=location, authorization="Upload one-time-a1"
    )


def test_upload_resource_sends_nothing_to_a_refused_location(settings, fake, connections, strict):
    fake.route("PUT", "/upload/r1", Reply(200, b""))
    https_url = fake.url.replace("http://", "https://")
    for location in (f"{fake.url}/upload/r1", f"{https_url}/upload/r1"):
        with pytest.raises(UploadLocationRefusedError) as caught:
            client.upload_resource(slot_at(location), b"%PDF-1.4 borrower")
        assert "Upload one-time-a1" not in str(caught.value)
    assert connections == [] and fake.seen == []

    # The same slot, in a local run, reaches the server: the refusal above is the rule's doing.
    settings.SVC_UPLOAD_LOCATION_STRICT = False
    client.upload_resource(slot_at(f"{fake.url}/upload/r1"), b"%PDF-1.4 borrower")
    assert len(connections) == 1 and [s.body for s in fake.requests_to("PUT", "/upload/r1")] == [b"%PDF-1.4 borrower"]


def test_a_name_rebound_to_our_network_after_the_check_is_refused_at_connect(fake, connections, strict, monkeypatch):
    """DNS rebinding: public when the location is checked, this machine's loopback when the PUT's
    connection looks it up again. The connection is held to the same rule: nothing is sent."""
    answers = [[PUBLIC_V4], ["127.0.0.1"]]
    real = strict.__call__

    def rebinding(host, port, *args, **kwargs):
        if host == "rebind.example":
            strict.names[host] = answers.pop(0) if len(answers) > 1 else answers[0]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    fake.route("PUT", "/upload/r1", Reply(200, b""))
    location = f"https://rebind.example:{fake.httpd.server_address[1]}/upload/r1"
    with pytest.raises(UploadLocationRefusedError, match="loopback address"):
        client.upload_resource(slot_at(location), b"%PDF-1.4 borrower")
    assert connections == [] and fake.seen == []


@pytest.mark.django_db
def test_the_order_fails_for_good_on_a_refused_location(
    settings, fake, connections, fake_platform, monkeypatch, strict
):
    settings.SVC_BASE_URL = f"{fake.url}/svc"  # the fake platform's slots point here: http, loopback
    monkeypatch.setattr(client, "upload_resource", REAL_UPLOAD_RESOURCE)
    fake.route("PUT", "/svc/uploads/res-1", Reply(200, b""))
    product_create()
    fake_platform.transaction_add(
        "txn-location-1",
        request={"type": "NEW_REQUEST", "loan": LOAN, "credentials": LENDER_CREDENTIALS},
        product_name="address-verification",
    )
    order, _, _ = order_open(transaction_id="txn-location-1", product_name="address-verification")

    done = order_ran(order_id=order.pk)  # not raised: nothing to retry

    assert done.status == OrderStatus.FAILED and done.failure_code == FailureCode.SERVICE_REJECTED
    assert done.failure_reason.startswith(
        "The service gave an upload location we do not send documents to (upload location refused: not https"
    )
    assert "Upload one-time" not in done.last_error + done.failure_reason
    assert fake_platform.names() == ["get_transaction", "request_upload_slots"]  # never delivered
    assert connections == [] and fake.seen == []


# the settings: strict whenever DJANGO_DEBUG is off --------------------------------------------------------------------
def test_production_is_strict_and_cannot_be_made_otherwise():
    code = SETTINGS + "print(s.SVC_UPLOAD_LOCATION_STRICT, s.SVC_UPLOAD_HOSTS)"
    broker = {"CELERY_BROKER_URL": "redis://redis.partner.example:6379/0"}  # production may require one
    result = run_django({**PRODUCTION, **broker, "SVC_UPLOAD_LOCATION_STRICT": "false"}, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "[]"]
    result = run_django({"DJANGO_DEBUG": "true", "SVC_UPLOAD_HOSTS": "uploads.example.com,.blob.example.net"}, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False ['uploads.example.com', '.blob.example.net']"
