"""HEAD on every page a browser or load balancer asks for, and the site's icon (#14, item 9).

Load balancers probe with HEAD: it answers as GET would (same checks, same status) without a body, and
other methods stay refused. Browsers ask /favicon.ico by default: it leads to the static icon, and the
pages (embedded UI, sandbox host, admin) link the SVG.
"""

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from partner.core import health

pytestmark = pytest.mark.django_db

STATIC = Path(__file__).resolve().parents[2] / "static"

PAGES = ["/", "/sandbox/host/", "/healthz", "/healthz/live", "/healthz/ready"]
ICON_LINK = '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'


@pytest.mark.parametrize("path", PAGES)
def test_head_answers_as_get_without_a_body(path):
    client = Client()
    got = client.get(path)
    head = client.head(path)
    assert got.status_code == 200
    assert head.status_code == got.status_code
    assert head.content == b""
    assert head["Content-Type"] == got["Content-Type"]
    assert head.get("Content-Security-Policy") == got.get("Content-Security-Policy")


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_other_methods_are_still_refused(path, method):
    assert getattr(Client(), method)(path).status_code == 405


@pytest.mark.parametrize("path", ["/healthz", "/healthz/ready"])
def test_head_on_health_runs_the_checks_and_gives_the_same_status(path, monkeypatch):
    calls = []

    def broker_down(timeout=2.0):
        calls.append(timeout)
        return False

    monkeypatch.setattr(health, "broker_check", broker_down)
    client = Client()
    assert client.get(path).status_code == 503
    head = client.head(path)
    assert head.status_code == 503
    assert head.content == b""
    assert len(calls) == 2  # HEAD asked the broker too: its 503 is not a guess


def test_favicon_ico_leads_to_the_static_icon():
    client = Client()
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/favicon.ico"
    assert "max-age=86400" in response["Cache-Control"]
    assert client.head("/favicon.ico").status_code == 301
    assert client.post("/favicon.ico").status_code == 405

    icon = client.get("/favicon.ico", follow=True)
    assert icon.status_code == 200
    assert icon["Content-Type"] == "image/x-icon"
    ico = b"".join(icon.streaming_content)
    assert ico == (STATIC / "favicon.ico").read_bytes()
    assert ico[:4] == b"\x00\x00\x01\x00"  # the ICO header


def test_the_svg_icon_is_served_as_an_image():
    response = Client().get("/static/favicon.svg")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("image/svg+xml")
    svg = b"".join(response.streaming_content)
    assert svg == (STATIC / "favicon.svg").read_bytes()
    assert svg.startswith(b'<svg xmlns="http://www.w3.org/2000/svg"')


@pytest.mark.parametrize("path", ["/", "/sandbox/host/", "/admin/login/"])
def test_the_pages_link_the_icon(path):
    response = Client().get(path)
    assert response.status_code == 200
    assert ICON_LINK in response.content.decode()


def test_the_admin_keeps_its_branding_and_links_the_icon_on_every_page(admin_client):
    page = admin_client.get("/admin/auth/user/").content.decode()
    assert ICON_LINK in page
    # Django's base_site.html, extended rather than replaced, with the partner's name as its header.
    assert settings.PARTNER_NAME in page and "Django administration" not in page
    assert '<div id="site-name">' in page
