"""X-Forwarded-Proto is believed only from the proxies TRUSTED_PROXIES names."""

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db

PROXY_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


def scheme_seen(client, remote_addr: str) -> int:
    """The status of a plain-HTTP request claiming HTTPS through X-Forwarded-Proto: 301 when the claim
    was dropped (redirected to HTTPS), anything else when it was believed."""
    return client.get("/api/schema/", HTTP_X_FORWARDED_PROTO="https", REMOTE_ADDR=remote_addr).status_code


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_PROXY_SSL_HEADER=PROXY_HEADER, TRUSTED_PROXIES=["10.0.0.0/8"])
def test_a_client_cannot_claim_https_past_the_redirect(client):
    assert scheme_seen(client, "203.0.113.9") == 301


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_PROXY_SSL_HEADER=PROXY_HEADER, TRUSTED_PROXIES=["10.0.0.0/8"])
def test_the_named_proxy_is_believed(client):
    assert scheme_seen(client, "10.1.2.3") == 200


@override_settings(SECURE_SSL_REDIRECT=True, SECURE_PROXY_SSL_HEADER=PROXY_HEADER, TRUSTED_PROXIES=[])
def test_with_no_proxy_named_nobody_is_believed(client):
    assert scheme_seen(client, "127.0.0.1") == 301


def client_address_seen(*, remote_addr: str, forwarded_for: str | None, proxies: list[str]) -> str:
    """REMOTE_ADDR as the views see it after the middleware."""
    from django.http import HttpResponse
    from django.test import RequestFactory

    from partner.core.middleware import TrustedProxyMiddleware

    seen = {}

    def view(request):
        seen["address"] = request.META["REMOTE_ADDR"]
        return HttpResponse()

    extra = {"HTTP_X_FORWARDED_FOR": forwarded_for} if forwarded_for is not None else {}
    request = RequestFactory().get("/", REMOTE_ADDR=remote_addr, **extra)
    with override_settings(TRUSTED_PROXIES=proxies):
        TrustedProxyMiddleware(view)(request)
    return seen["address"]


@pytest.mark.parametrize(
    "remote_addr, forwarded_for, expected",
    [
        ("10.0.0.5", "198.51.100.7", "198.51.100.7"),  # the client, as our load balancer saw it
        ("10.0.0.5", "1.2.3.4, 198.51.100.7", "198.51.100.7"),  # the left part is the client's word
        ("10.0.0.5", "198.51.100.7, 10.0.0.9", "198.51.100.7"),  # through two of our proxies
        ("10.0.0.5", "garbage, 198.51.100.7", "198.51.100.7"),
        ("10.0.0.5", "198.51.100.7, garbage", "10.0.0.5"),  # unreadable next to us: not believed
        ("10.0.0.5", None, "10.0.0.5"),
        ("203.0.113.9", "198.51.100.7", "203.0.113.9"),  # not from a proxy: the header is a claim
    ],
)
def test_the_client_address_comes_from_x_forwarded_for_of_trusted_proxies_only(remote_addr, forwarded_for, expected):
    assert client_address_seen(remote_addr=remote_addr, forwarded_for=forwarded_for, proxies=["10.0.0.0/8"]) == expected


def test_a_kept_verdict_answers_as_the_first_did_and_the_kept_ones_stay_bounded(monkeypatch):
    """The verdict on each address is kept (parsing it cost more than the rest of the middleware): the same
    address is judged the same again, whatever came in between, and a flood of addresses is not kept for ever."""
    from django.http import HttpResponse
    from django.test import RequestFactory

    import partner.core.middleware as middleware_module
    from partner.core.middleware import TrustedProxyMiddleware

    monkeypatch.setattr(middleware_module, "_VERDICTS_KEPT", 8)
    seen = []

    def view(request):
        seen.append(request.META["REMOTE_ADDR"])
        return HttpResponse()

    with override_settings(TRUSTED_PROXIES=["10.0.0.0/8"]):
        middleware = TrustedProxyMiddleware(view)
    factory = RequestFactory()
    for round_ in range(2):
        for number in range(20):  # more addresses than are kept
            client = f"198.51.100.{number}"
            middleware(factory.get("/", REMOTE_ADDR="10.0.0.5", HTTP_X_FORWARDED_FOR=client))
            middleware(factory.get("/", REMOTE_ADDR=client, HTTP_X_FORWARDED_FOR="192.0.2.1"))
            assert seen[-2:] == [client, client], round_
            assert len(middleware._verdicts) <= 8
