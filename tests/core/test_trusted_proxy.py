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
