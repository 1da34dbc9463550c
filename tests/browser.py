"""Browser fixtures shared by every browser test (the UI's and the admin's): Chromium via Playwright.

One Playwright session for the whole test session (one thread cannot hold two), opened when the
first browser test needs it; each test gets its own context and page. Registered in
`tests/conftest.py`.
"""

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts" / "ui"

# Playwright's sync API runs an event loop in this thread; Django's ORM calls from
# the test body (fixtures, assertions) are still synchronous and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    messages = []
    page.on("console", lambda message: messages.append(f"{message.type}: {message.text}"))
    page.on("pageerror", lambda error: messages.append(f"pageerror: {error}"))
    page.console_messages = messages
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    page.requested_urls = requested
    yield page
    context.close()


@pytest.fixture
def shot(page):
    """Save a screenshot of the current state under test-artifacts/ui/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def save(name: str, target=None):
        path = ARTIFACTS / f"{name}.png"
        if target is None:
            page.screenshot(path=str(path), full_page=True)
        else:
            target.screenshot(path=str(path))
        return path

    return save
