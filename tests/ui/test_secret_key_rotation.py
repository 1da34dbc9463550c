"""Rotating the secret key without ending every session: DJANGO_SECRET_KEY_FALLBACKS is read from
the environment, and a panel session signed with the previous key still reads until it expires."""

import json

import pytest

from partner.ui.errors import PanelSessionInvalid
from partner.ui.panel_sessions import PanelSession, panel_session_issue, panel_session_read
from tests.helpers.processes import SETTINGS, run_django

OLD_KEY = "old-key-Zq8wN3vR5tY7uI9oP1aS2dF4gH6jK8lX0cV2bN4mQ6wE8rT"
NEW_KEY = "new-key-Lk2jH4gF6dS8aP0oI2uY4tR6eW8qZ0xC2vB4nM6kJ8hG0fD"
SESSION = PanelSession(origin_id="o-1", product_name="p", loan_number="L-1", account_id=1, company_id=2)


def test_fallbacks_are_read_from_the_environment():
    result = run_django(
        {"DJANGO_SECRET_KEY": NEW_KEY, "DJANGO_SECRET_KEY_FALLBACKS": f"{OLD_KEY},older-key"},
        SETTINGS + "import json; print(json.dumps(s.SECRET_KEY_FALLBACKS))",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [OLD_KEY, "older-key"]


def test_a_panel_session_signed_with_the_previous_key_still_reads(settings):
    settings.SECRET_KEY = OLD_KEY
    token = panel_session_issue(SESSION)
    settings.SECRET_KEY = NEW_KEY
    settings.SECRET_KEY_FALLBACKS = [OLD_KEY]
    assert panel_session_read(token) == SESSION
    settings.SECRET_KEY_FALLBACKS = []  # once the old key is dropped, its sessions end
    with pytest.raises(PanelSessionInvalid):
        panel_session_read(token)
