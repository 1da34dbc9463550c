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
