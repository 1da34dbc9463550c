"""resource_ref_parse: only transactions and events of the configured service."""

import pytest

from partner.platform.client import resource_ref_parse
from partner.platform.errors import ResourceOutsideServiceError

BASE = "https://svc.example.com:8443/sandbox"


@pytest.fixture(autouse=True)
def base(settings):
    settings.SVC_BASE_URL = BASE


def test_transaction_ref():
    ref = resource_ref_parse(f"{BASE}/partner/v2/transactions/6f1c-22ab")
    assert (ref.kind, ref.transaction_id, ref.event_id) == ("transaction", "6f1c-22ab", None)


def test_event_ref():
    ref = resource_ref_parse(f"{BASE}/partner/v2/transactions/t-1/events/e-9")
    assert (ref.kind, ref.transaction_id, ref.event_id) == ("event", "t-1", "e-9")


def test_scheme_and_host_compare_case_insensitively():
    ref = resource_ref_parse("HTTPS://SVC.example.COM:8443/sandbox/partner/v2/transactions/t-1")
    assert ref.transaction_id == "t-1"


def test_default_port_matches_implicit_port(settings):
    settings.SVC_BASE_URL = "https://svc.example.com"
    assert resource_ref_parse("https://svc.example.com:443/partner/v2/transactions/t").transaction_id == "t"


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example.com:8443/sandbox/partner/v2/transactions/t-1",
        "https://svc.example.com.evil.net:8443/sandbox/partner/v2/transactions/t-1",
        "http://svc.example.com:8443/sandbox/partner/v2/transactions/t-1",
        "https://svc.example.com/sandbox/partner/v2/transactions/t-1",
        "https://svc.example.com:8443/other/partner/v2/transactions/t-1",
        "https://svc.example.com:8443/sandboxx/partner/v2/transactions/t-1",
        "https://user@svc.example.com:8443/sandbox/partner/v2/transactions/t-1",
        "https://svc.example.com:8443@evil.example.com/sandbox/partner/v2/transactions/t-1",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions/../products/p-1",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions/t%2F1",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions/t-1?x=1",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions/t-1#frag",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions/t-1/",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions/t-1/response",
        "https://svc.example.com:8443/sandbox/partner/v2/products/p-1",
        "https://svc.example.com:8443/sandbox/partner/v2/transactions",
        "https://svc.example.com:8443/sandbox/",
        "//svc.example.com:8443/sandbox/partner/v2/transactions/t-1",
        "/sandbox/partner/v2/transactions/t-1",
        "https://svc.example.com:99999/sandbox/partner/v2/transactions/t-1",
        "",
        None,
    ],
)
def test_refused(url):
    with pytest.raises(ResourceOutsideServiceError):
        resource_ref_parse(url)
