"""Chromium via Playwright for every browser test (the UI's and the admin's): the fixtures, and the
sandbox's host page driven like a person would.

One Playwright session for the whole test session (one thread cannot hold two), opened when the
first browser test needs it; each test gets its own context and page, the admin signed in
(`signed_in`) or the sandbox's host page (`host`). The fixtures are registered in `tests/conftest.py`.
"""

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "ui"

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
def signed_in(live_server, page, django_user_model):
    """The page's browser signed in to the admin as a superuser (the session cookie of a login made
    through Django's test client, handed to the browser)."""
    from django.conf import settings
    from django.test import Client

    user = django_user_model.objects.create_superuser("staff", "staff@example.com", "staff-password-1")
    client = Client()
    client.force_login(user)
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": live_server.url}])
    return page


@pytest.fixture
def shot(page):
    """Save a screenshot of the current state under test-artifacts/ui/<name>.png."""

    def save(name: str, target=None):
        path = ARTIFACTS / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)  # a name may hold a folder: "host-page/…"
        if target is None:
            page.screenshot(path=str(path), full_page=True)
        else:
            target.screenshot(path=str(path))
        return path

    return save


WAIT_MS = 30_000  # how long a state may take to appear (a wait, not a timing assertion)


class Host:
    """The sandbox host page, driven like a person would."""

    def __init__(self, page, base_url):
        self.page = page
        self.base_url = base_url

    def open(self):
        from playwright.sync_api import expect

        self.page.goto(f"{self.base_url}/sandbox/host/")
        expect(self.page.locator("#host-status")).to_contain_text("Ready", timeout=WAIT_MS)
        return self

    def choose(self, select_id: str, text: str):
        value = self.page.eval_on_selector(
            f"#{select_id}",
            "(select, text) => {"
            " const o = [...select.options].find(o => o.textContent.includes(text)); return o && o.value; }",
            text,
        )
        assert value, f"no {select_id} option mentions {text!r}"
        self.page.select_option(f"#{select_id}", value)

    def launch_new(self, *, user="lender.demo", loan=None, product="Address"):
        self.choose("user", user)
        if loan:
            self.choose("loan", loan)
        self.choose("product", product)
        self.page.click("#open-new")
        return self.ui

    @property
    def ui(self):
        return self.page.frame_locator("iframe[name=partner-panel]")

    def log_text(self) -> str:
        return self.page.locator("#log").inner_text()


@pytest.fixture
def host(page, service):
    """The sandbox host page of the live server (`service`), for the test to open (`host.open()`)
    once it has made what the page should list."""
    return Host(page, service.url)


def app_state(ui, state):
    """Wait until the panel's app shows `state` (its `data-state`)."""
    from playwright.sync_api import expect

    expect(ui.locator("#app")).to_have_attribute("data-state", state, timeout=WAIT_MS)
