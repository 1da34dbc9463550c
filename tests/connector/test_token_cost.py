"""The token endpoint's cost (issue 36, Medium 7): client secrets kept under a fast keyed hash (a
128-random-character machine secret needs no password hasher), the same work for an unknown
client id as for a known one, and limits per client id as well as per address (an IPv6 client per
/64)."""

import base64
import time

import pytest
from django.contrib.auth.hashers import make_password
from oauth2_provider.models import get_application_model

from partner.connector.oauth import ClientSecretHasher

pytestmark = pytest.mark.django_db

TOKEN = "/api/v1/oauth/token"


@pytest.fixture(autouse=True)
def _counts_of_this_test_only():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def token(client, client_id: str, secret: str, address: str = "203.0.113.7"):
    basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
    return client.post(
        TOKEN, {"grant_type": "client_credentials"}, HTTP_AUTHORIZATION=f"Basic {basic}", REMOTE_ADDR=address
    )


@pytest.fixture
def hashes(monkeypatch):
    """How many keyed hashes each token request computes."""
    made = []
    digest = ClientSecretHasher._digest

    def counted(self, password, salt, key):
        made.append(salt)
        return digest(self, password, salt, key)

    monkeypatch.setattr(ClientSecretHasher, "_digest", counted)
    return made


def test_a_client_secret_is_kept_under_the_keyed_hash_and_costs_the_same_for_an_unknown_id(client, connection, hashes):
    created = connection.created
    stored = get_application_model().objects.get(client_id=created.client_id).client_secret
    assert stored.startswith("client_hmac_sha256$") and created.client_secret not in stored
    assert len(created.client_secret) == 128

    assert token(client, created.client_id, created.client_secret).status_code == 200
    hashes.clear()
    assert token(client, created.client_id, "a-wrong-secret").status_code == 401
    known = len(hashes)
    hashes.clear()
    assert token(client, "no-such-client-id", "a-wrong-secret").status_code == 401
    assert known >= 1 and len(hashes) == known  # equal work: the unknown id's secret checked too

    started = time.process_time()
    for _ in range(20):
        token(client, created.client_id, "a-wrong-secret", address=f"198.51.100.{_}")
    assert (time.process_time() - started) / 20 < 0.1  # no password hasher's 0.3 s of CPU a request


def test_a_secret_kept_under_an_older_hash_or_key_is_kept_again_under_the_current_one(client, connection, settings):
    created = connection.created
    applications = get_application_model().objects.filter(client_id=created.client_id)
    applications.update(client_secret=make_password(created.client_secret, hasher="md5"))  # as PBKDF2 kept it
    assert token(client, created.client_id, created.client_secret).status_code == 200
    current = applications.get().client_secret
    assert current.startswith("client_hmac_sha256$")

    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-rotated-secret-key-" + "Qx7vB2mK9pLw4zR8" * 3
    assert token(client, created.client_id, created.client_secret).status_code == 200  # by the fallback
    assert applications.get().client_secret != current  # and now under the new key
    settings.SECRET_KEY_FALLBACKS = []
    assert token(client, created.client_id, created.client_secret).status_code == 200


def test_token_requests_are_limited_per_client_id_whatever_the_address(client, connection, settings, ratelimit_clock):
    settings.RATELIMIT_API_TOKEN = "3/m"
    created = connection.created
    for n in range(3):
        assert token(client, created.client_id, "guess", address=f"192.0.2.{n}").status_code == 401
    refused = token(client, created.client_id, created.client_secret, address="192.0.2.99")
    assert refused.status_code == 429 and refused["Content-Type"] == "application/problem+json"
    assert 1 <= int(refused["Retry-After"]) <= 61
    assert token(client, "another-client-id", "guess", address="192.0.2.98").status_code == 401  # its own count


def test_an_ipv6_client_counts_by_its_64_whatever_the_client_ids(client, connection, settings, ratelimit_clock):
    settings.RATELIMIT_API_TOKEN = "3/m"
    for n in range(3):
        assert token(client, f"guessed-id-{n}", "guess", address=f"2001:db8:1:2::{n + 1}").status_code == 401
    assert token(client, "guessed-id-9", "guess", address="2001:db8:1:2:ffff::9").status_code == 429
    assert token(client, "guessed-id-9", "guess", address="2001:db8:1:3::1").status_code == 401  # another /64
