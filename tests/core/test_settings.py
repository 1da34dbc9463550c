"""Settings parsing: bad configuration stops start-up with a message that names the problem."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_django(env_overrides, code="import django; django.setup(); print('started')"):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_URL", "SVC_", "FIELD_", "SANDBOX_", "CELERY_", "CACHE_URL"))
    }
    # A local .env must not fill in what the test leaves out.
    env.update({"DJANGO_SETTINGS_MODULE": "config.settings.base", "DJANGO_READ_DOT_ENV_FILE": "false", **env_overrides})
    return subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )


PRODUCTION = {
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "x" * 50,
    "DJANGO_ALLOWED_HOSTS": "partner.example.com",
    "FIELD_ENCRYPTION_KEYS": "bG9jYWwtZGV2LW9ubHkta2V5LW5vdC1zZWNyZXQtMDA=",
    "SVC_CLIENT_SECRET": "a-real-secret",
}


def test_production_settings_start():
    result = run_django(PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert "started" in result.stdout


def test_missing_secret_key_in_production_stops_startup():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    result = run_django(env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is required" in result.stderr


def test_missing_allowed_hosts_in_production_stops_startup():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_ALLOWED_HOSTS"}
    result = run_django(env)
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS is required" in result.stderr


def test_malformed_database_url_stops_startup_without_echoing_it():
    result = run_django({**PRODUCTION, "DATABASE_URL": "not a url:secretpw@@"})
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr
    assert "secretpw" not in result.stderr


def test_unknown_database_scheme_stops_startup():
    result = run_django({**PRODUCTION, "DATABASE_URL": "nosuchdb://u:p@h/x"})
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


def test_production_defaults_are_safe():
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0, s.SANDBOX_ENABLED, "
        "s.SESSION_COOKIE_SAMESITE, s.CSRF_COOKIE_SAMESITE, s.SECURE_PROXY_SSL_HEADER)"
    )
    result = run_django(PRODUCTION, code)
    assert result.returncode == 0, result.stderr
    # The admin's session cookie stays same-site; only the embedded page's CSRF cookie crosses sites.
    # No proxy named: X-Forwarded-Proto is not believed.
    assert result.stdout.split() == ["True", "True", "True", "False", "Lax", "None", "None"]


def test_sandbox_can_be_asked_for_in_production():
    code = "import django; django.setup(); from django.conf import settings as s; print(s.SANDBOX_ENABLED)"
    result = run_django({**PRODUCTION, "SANDBOX_ENABLED": "true"}, code)
    assert result.stdout.strip() == "True"


def test_debug_mode_runs_without_secrets():
    result = run_django({"DJANGO_DEBUG": "true"})
    assert result.returncode == 0, result.stderr
