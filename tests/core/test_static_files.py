"""Static files are served by the application itself with DEBUG off, as under gunicorn in production."""

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "url, source",
    [
        ("/static/ui/embed.js", ROOT / "static" / "ui" / "embed.js"),
        ("/static/ui/embed.css", ROOT / "static" / "ui" / "embed.css"),
        (
            "/static/vendor/em-ssf-guest/elli.ssf.guest.js",
            ROOT / "node_modules" / "@elliemae" / "em-ssf-guest" / "dist" / "elli.ssf.guest.js",
        ),
    ],
)
def test_the_page_assets_are_served_without_a_separate_server(url, source):
    assert not settings.DEBUG
    response = Client().get(url)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == source.read_bytes()
    assert "max-age" in response["Cache-Control"]


def test_an_unknown_static_file_is_404():
    assert Client().get("/static/ui/nothing-here.js").status_code == 404
