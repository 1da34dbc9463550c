"""Waiting for something another thread or process does: poll until it is so, or fail the test.

A wait ends when the condition holds; its timeout only bounds a test that would otherwise hang, it
decides no verdict (no test asserts how long something took).
"""

import time

import pytest


def wait_for(predicate, *, timeout=60.0, interval=0.2, message="condition"):
    """Poll `predicate` until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:g}s waiting for {message() if callable(message) else message}")


def answered(request, *, timeout=60.0, message="the server to answer"):
    """`request()`'s response once the server it calls accepts connections (a `requests`
    ConnectionError means not yet); fail the test after `timeout` seconds."""
    import requests

    def attempt():
        try:
            return request()
        except requests.ConnectionError:
            return None

    return wait_for(attempt, timeout=timeout, interval=0.1, message=message)
