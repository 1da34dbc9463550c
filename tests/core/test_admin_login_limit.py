"""The admin's sign-in is rate-limited per address and per username (settings.RATELIMIT_ADMIN_LOGIN).

Found by a probe: 50 wrong admin passwords, then the right one, logged in. Past the limit even the
right password is answered 429 with Retry-After and nobody is signed in. Every test uses a username and
addresses of its own, so no test (nor another run sharing a Redis cache) counts against another, and
the `clock` of the windows stands still until a test moves it, so that no window ends mid-test.
"""

import itertools
import random
import re
import time
import uuid
from types import SimpleNamespace

import django_ratelimit.core
import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

PASSWORD = "staff-password-1"
_RUN = random.randrange(256)
_NEXT = itertools.count(1)


def new_address() -> str:
    return f"10.{_RUN}.{next(_NEXT)}.9"


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """The clock of django-ratelimit's windows, held at the test's start; `clock[0] += seconds` moves it."""
    now = [time.time()]
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: now[0]))
    return now


@pytest.fixture
def username(django_user_model):
    name = f"staff-{uuid.uuid4().hex[:10]}"
    django_user_model.objects.create_superuser(name, f"{name}@partner.example", PASSWORD)
    return name


def sign_in(client, username, password, address):
    data = {"username": username, "password": password, "next": "/admin/"}
    return client.post("/admin/login/", data, REMOTE_ADDR=address)


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def assert_refused(response) -> int:
    """429 with Retry-After, and a body saying to wait that many seconds."""
    assert response.status_code == 429, response.content
    seconds = int(response["Retry-After"])
    assert 1 <= seconds <= 60
    assert re.search(rf"\bWait {seconds} seconds\b", response.content.decode())
    return seconds


def test_the_right_password_after_eleven_wrong_ones_is_refused(client, settings, username):
    settings.RATELIMIT_ADMIN_LOGIN = "10/m"
    address = new_address()
    for attempt in range(10):
        response = sign_in(client, username, f"wrong-password-{attempt}", address)
        assert response.status_code == 200  # the form again, with its error
    assert_refused(sign_in(client, username, "wrong-password-10", address))

    assert_refused(sign_in(client, username, PASSWORD, address))
    assert not signed_in(client)
    assert client.get("/admin/login/", REMOTE_ADDR=address).status_code == 200  # the page itself stays


def test_wrong_passwords_from_many_addresses_limit_the_username(client, settings, username):
    settings.RATELIMIT_ADMIN_LOGIN = "3/m"
    for attempt in range(3):
        assert sign_in(client, username, f"wrong-password-{attempt}", new_address()).status_code == 200

    # Case and spaces do not make another username of it.
    assert_refused(sign_in(client, f" {username.upper()} ", "wrong-password-3", new_address()))
    assert_refused(sign_in(client, username, PASSWORD, new_address()))
    assert not signed_in(client)


def test_another_address_and_username_are_not_limited(client, settings, username, django_user_model):
    settings.RATELIMIT_ADMIN_LOGIN = "2/m"
    limited = new_address()
    for attempt in range(3):
        sign_in(client, username, f"wrong-password-{attempt}", limited)
    assert_refused(sign_in(client, username, PASSWORD, limited))

    other = f"staff-{uuid.uuid4().hex[:10]}"
    django_user_model.objects.create_superuser(other, f"{other}@partner.example", PASSWORD)
    response = sign_in(client, other, PASSWORD, new_address())
    assert response.status_code == 302
    assert signed_in(client)


def test_signing_in_does_not_count_against_the_username(settings, username):
    settings.RATELIMIT_ADMIN_LOGIN = "2/m"
    for _ in range(3):
        client = Client()
        assert sign_in(client, username, PASSWORD, new_address()).status_code == 302
        assert signed_in(client)


def test_after_the_window_the_right_password_signs_in(client, settings, username, clock):
    settings.RATELIMIT_ADMIN_LOGIN = "2/m"
    address = new_address()
    for attempt in range(2):
        assert sign_in(client, username, f"wrong-password-{attempt}", address).status_code == 200
    seconds = assert_refused(sign_in(client, username, PASSWORD, address))
    assert not signed_in(client)

    clock[0] += seconds - 1  # a second short of Retry-After: still refused
    assert sign_in(client, username, PASSWORD, address).status_code == 429
    clock[0] += 1  # Retry-After has passed: both counts are in new windows
    assert sign_in(client, username, PASSWORD, address).status_code == 302
    assert signed_in(client)
