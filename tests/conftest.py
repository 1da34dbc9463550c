"""Shared fixtures of the test suite."""

import socket

import pytest


def port_answers(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture
def redis_url():
    if not port_answers(6379):
        pytest.skip("Redis does not answer on 127.0.0.1:6379")
    return "redis://127.0.0.1:6379/13"


@pytest.fixture
def service(live_server, settings):
    """The application on a live server, talking to its own sandbox over real HTTP.

    Points every service setting at the live server's sandbox and clears the
    cache (so no access token of an earlier test is reused).
    """
    from types import SimpleNamespace

    from django.core.cache import cache

    base = live_server.url
    settings.PUBLIC_BASE_URL = base
    settings.SVC_BASE_URL = f"{base}/sandbox"
    settings.SVC_TOKEN_URL = f"{base}/sandbox/oauth2/v1/token"
    settings.HOST_ORIGINS = [base]
    cache.clear()
    yield SimpleNamespace(url=base, base_url=settings.SVC_BASE_URL, token_url=settings.SVC_TOKEN_URL)
    cache.clear()
