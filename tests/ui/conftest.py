"""Fixtures of the UI tests: the browser ones are shared (`tests/browser.py`); the `demo` data is in
tests/conftest.py."""

from tests.browser import ARTIFACTS, CHROMIUM  # noqa: F401  (the UI's tests import them from here)
