"""Access tokens travel in the Authorization header only, are kept as a checksum, and a system can
revoke its own (RFC 7009) (issue 36, lows)."""

import base64

import pytest
from oauth2_provider.models import get_access_token_model

from partner.connector.services import connection_create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _counts_of_this_test_only():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def token_of(client, created) -> str:
    answer = client.post(
        "/api/v1/oauth/token",
        {"grant_type": "client_credentials"},
        HTTP_AUTHORIZATION=basic(created.client_id, created.client_secret),
    )
    assert answer.status_code == 200
    return answer.json()["access_token"]


def test_a_token_in_the_query_string_is_refused_and_none_is_kept_in_clear(client, connection):
    token = token_of(client, connection.created)
    assert client.get("/api/v1/orders", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    refused = client.get(f"/api/v1/orders?access_token={token}")
    assert refused.status_code == 401 and refused["Content-Type"] == "application/problem+json"
    assert not get_access_token_model().objects.filter(token=token).exists()  # a checksum, not the token


def test_a_system_revokes_its_own_token_and_no_other(client, connection):
    created = connection.created
    token = token_of(client, created)
    other = connection_create(name="other-amc")

    # another client's revocation: answered 200 (nothing told), the token still works
    answer = client.post(
        "/api/v1/oauth/revoke", {"token": token}, HTTP_AUTHORIZATION=basic(other.client_id, other.client_secret)
    )
    assert answer.status_code == 200
    assert client.get("/api/v1/orders", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200

    # a wrong secret: refused as the token endpoint refuses
    wrong = client.post("/api/v1/oauth/revoke", {"token": token}, HTTP_AUTHORIZATION=basic(created.client_id, "nope"))
    assert wrong.status_code == 401 and wrong["Content-Type"] == "application/problem+json"
    assert wrong.json()["error"] == "invalid_client"

    revoked = client.post(
        "/api/v1/oauth/revoke",
        {"token": token, "token_type_hint": "access_token"},
        HTTP_AUTHORIZATION=basic(created.client_id, created.client_secret),
    )
    assert revoked.status_code == 200
    assert client.get("/api/v1/orders", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 401
