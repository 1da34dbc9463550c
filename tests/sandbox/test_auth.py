"""Token endpoint (client credentials, expiry) and the bearer check on every endpoint, over HTTP."""

import base64

import pytest
import requests
from django.conf import settings as django_settings

from partner.sandbox.models import AccessToken
from tests.helpers.sandbox import token_get


def _form(client_id=None, client_secret=None, **extra):
    return {
        "grant_type": "client_credentials",
        "client_id": django_settings.SVC_CLIENT_ID if client_id is None else client_id,
        "client_secret": django_settings.SVC_CLIENT_SECRET if client_secret is None else client_secret,
        **extra,
    }


def test_token_for_the_configured_client_in_the_body(sandbox):
    answer = requests.post(sandbox.token_url, data=_form(scope="pc pcapi"), timeout=10)
    assert answer.status_code == 200
    document = answer.json()
    assert document["token_type"] == "Bearer"
    assert document["expires_in"] == 3600
    assert document["access_token"]
    assert answer.headers["Cache-Control"] == "no-store"
    # Only the digest is stored.
    assert not AccessToken.objects.filter(digest=document["access_token"]).exists()
    assert AccessToken.objects.count() == 1


def test_token_with_http_basic(sandbox):
    pair = f"{django_settings.SVC_CLIENT_ID}:{django_settings.SVC_CLIENT_SECRET}".encode()
    answer = requests.post(
        sandbox.token_url,
        data={"grant_type": "client_credentials"},
        headers={"Authorization": "Basic " + base64.b64encode(pair).decode()},
        timeout=10,
    )
    assert answer.status_code == 200
    assert answer.json()["access_token"]


def test_token_lifetime_is_configurable(sandbox, settings):
    settings.SANDBOX_TOKEN_LIFETIME = 120
    assert requests.post(sandbox.token_url, data=_form(), timeout=10).json()["expires_in"] == 120


@pytest.mark.parametrize(
    "form",
    [
        _form(client_secret="wrong-secret"),
        _form(client_id="someone-else"),
        _form(client_secret=""),
    ],
)
def test_token_refused_for_a_bad_client(sandbox, form):
    answer = requests.post(sandbox.token_url, data=form, timeout=10)
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"
    assert django_settings.SVC_CLIENT_SECRET not in answer.text
    assert AccessToken.objects.count() == 0


def test_token_refuses_other_grants_and_json(sandbox):
    answer = requests.post(sandbox.token_url, data=_form(grant_type="password"), timeout=10)
    assert answer.status_code == 400
    assert answer.json()["error"] == "unsupported_grant_type"
    assert requests.post(sandbox.token_url, json=_form(), timeout=10).status_code == 400
    assert requests.get(sandbox.token_url, timeout=10).status_code == 405


def test_an_expired_token_is_refused(api, sandbox):
    assert api.get(api.url("/partner/v2/products"), timeout=10).status_code == 200
    AccessToken.objects.update(expires_at=AccessToken.objects.get().created_at)
    answer = api.get(api.url("/partner/v2/products"), timeout=10)
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_token"
    assert "Bearer" in answer.headers["WWW-Authenticate"]


ENDPOINTS = [
    ("GET", "/partner/v2/origins/some-origin"),
    ("GET", "/partner/v2/transactions/some-transaction"),
    ("PATCH", "/partner/v2/transactions/some-transaction/response"),
    ("POST", "/partner/v2/transactions/some-transaction/response/resources"),
    ("GET", "/partner/v2/transactions/some-transaction/events/some-event"),
    ("GET", "/partner/v2/transactions"),
    ("GET", "/partner/v2/products"),
    ("PUT", "/partner/v2/products/some-product"),
    ("PATCH", "/partner/v2/products/some-product"),
]


@pytest.mark.parametrize("method,path", ENDPOINTS)
@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", "Basic abc", "Bearer "])
def test_every_endpoint_needs_a_valid_bearer(sandbox, method, path, authorization):
    token_get(sandbox)  # a valid token exists, but is not the one sent
    headers = {"Authorization": authorization} if authorization else {}
    answer = requests.request(method, f"{sandbox.base}{path}", json={}, headers=headers, timeout=10)
    assert answer.status_code == 401
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json()["error"] == "invalid_token"
