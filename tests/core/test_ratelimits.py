"""The rate limits' key and settings: who counts as one client, and a malformed rate stops start-up."""

import uuid
from types import SimpleNamespace

import django_ratelimit.core
import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from partner.core.ratelimits import address_rate_limited, client_address
from tests.helpers.processes import run_django


def address_key(remote_addr: str) -> str:
    return client_address("any-group", RequestFactory().get("/", REMOTE_ADDR=remote_addr))


def test_an_ipv4_client_is_its_address():
    assert address_key("203.0.113.9") == "203.0.113.9"
    assert address_key("203.0.113.10") != address_key("203.0.113.9")


def test_an_ipv6_client_is_its_64_network():
    assert address_key("2001:db8:1:2::1") == address_key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")


@pytest.mark.parametrize("start", [1_000_000.0, 1_000_003.25, 1_000_007.99, 1_000_009.5])
def test_retry_after_is_exactly_when_the_window_frees(settings, monkeypatch, start):
    """Still limited a second before Retry-After has passed, served once it has: honest to the second."""
    settings.RATELIMIT_TEST = "1/10s"
    view = address_rate_limited(group=f"test-{uuid.uuid4().hex}", rate=lambda: settings.RATELIMIT_TEST)(
        lambda request: HttpResponse("served")
    )
    clock = [start]
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: clock[0]))

    def asked_at(moment: float):
        clock[0] = moment
        return view(RequestFactory().get("/", REMOTE_ADDR="192.0.2.44"))

    assert asked_at(start).status_code == 200
    limited = asked_at(start)
    assert limited.status_code == 429
    seconds = int(limited["Retry-After"])
    assert 1 <= seconds <= 10
    assert asked_at(start + seconds - 1).status_code == 429
    assert asked_at(start + seconds).status_code == 200


@pytest.mark.parametrize(
    "name, value",
    [("RATELIMIT_ORIGIN", value) for value in ("lots", "60", "0/m", "60/0m", "60/x")]
    + [("RATELIMIT_ADMIN_LOGIN", "10 per minute")],
)
def test_a_malformed_rate_stops_startup_naming_the_variable(name, value):
    result = run_django({"DJANGO_DEBUG": "true", name: value})
    assert result.returncode != 0
    assert f"{name} must be a rate like 60/m" in result.stderr


def test_rates_with_a_multiplier_start():
    code = "import django; django.setup(); from django.conf import settings as s; print(s.RATELIMIT_ORIGIN)"
    result = run_django({"DJANGO_DEBUG": "true", "RATELIMIT_ORIGIN": "100/5m"}, code=code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "100/5m"
