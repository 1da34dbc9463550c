"""Production preflight: `manage.py check --deploy` fails, naming the problem, on what must not ship.

Each case runs `manage.py check --deploy` in a subprocess with a controlled environment (no
`.env` read unless the test writes one), so what is checked is what a deployment would start with.
"""

import subprocess
import sys

import pytest
from django.core.checks import Error, run_checks

from partner.catalog.checks import signing_secrets_demo_check
from partner.core import checks
from tests.helpers.processes import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_SIGNING_SECRET,
    PRODUCTION,
    ROOT,
    django_env,
)
from tests.helpers.products import product_create

# Everything a real deployment sets: PostgreSQL, a Redis broker and cache, HTTPS addresses, its own
# client and signing secret.
GOOD = {
    **PRODUCTION,
    "DATABASE_URL": "postgres://partner:db-password-1@db.partner.example:5432/partner",
    "CELERY_BROKER_URL": "redis://redis.partner.example:6379/0",
    "CACHE_URL": "redis://redis.partner.example:6379/1",
    "PUBLIC_BASE_URL": "https://partner.example.com",
    "HOST_ORIGINS": "https://host.lender.example,https://other-host.lender.example",
    "SVC_BASE_URL": "https://api.service.example",
    "SVC_CLIENT_ID": "partner-client-7c1d",
    "SVC_SIGNING_SECRETS": "a-real-signing-secret-2b9e",
}


def check_deploy(env_overrides):
    """`manage.py check --deploy` with exactly this environment; its output (stdout and stderr)."""
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        env=django_env(env_overrides),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, result.stdout + result.stderr


def partner_errors(output):
    return [line for line in output.splitlines() if "partner.E" in line or "catalog.E" in line]


def test_a_good_production_environment_passes():
    code, output = check_deploy(GOOD)
    # Django's own deploy warnings may remain; none of ours.
    assert partner_errors(output) == [], output
    assert code == 0, output


@pytest.mark.parametrize(
    ("overrides", "check_id", "words"),
    [
        pytest.param({"SANDBOX_ENABLED": "true"}, "partner.E002", "sandbox", id="sandbox-mounted"),
        pytest.param({"DATABASE_URL": "sqlite:////srv/partner/db.sqlite3"}, "partner.E004", "SQLite", id="sqlite"),
        pytest.param({"CACHE_URL": "locmemcache://"}, "partner.E005", "CACHE_URL", id="cache-locmem"),
        pytest.param({"CACHE_URL": "filecache:///srv/partner/cache"}, "partner.E005", "CACHE_URL", id="cache-file"),
        pytest.param({"CACHE_URL": "dummycache://"}, "partner.E005", "CACHE_URL", id="cache-dummy"),
        pytest.param(
            {"HOST_ORIGINS": "https://host.lender.example,http://host.lender.example"},
            "partner.E006",
            "HOST_ORIGINS",
            id="host-origins-http",
        ),
        pytest.param({"PUBLIC_BASE_URL": "http://partner.example.com"}, "partner.E007", "PUBLIC_BASE_URL", id="public"),
        pytest.param({"SVC_CLIENT_ID": DEMO_CLIENT_ID}, "partner.E001", "SVC_CLIENT_ID", id="demo-client-id"),
    ],
)
def test_check_deploy_fails_on(overrides, check_id, words):
    code, output = check_deploy({**GOOD, **overrides})
    assert code != 0, output
    errors = partner_errors(output)
    assert [line for line in errors if check_id in line and words in line], output


def test_check_deploy_with_the_local_defaults_names_every_problem():
    # Production settings and nothing else but what start-up requires: the preflight lists it all.
    # (Start-up requires a broker server, so E003 cannot be reached from the environment: see below.)
    code, output = check_deploy({**PRODUCTION, "SANDBOX_ENABLED": "true"})
    assert code != 0
    ids = {f"partner.E00{n}" for n in range(1, 8)} - {"partner.E003"}
    found = {check_id for check_id in ids if check_id in output}
    assert found == ids, output


@pytest.mark.parametrize(
    "url",
    ["filesystem://", "memory://", "sqla+sqlite:///var/celery.sqlite3", "redis://redis-a.example:6379/0;memory://"],
)
def test_check_deploy_refuses_a_broker_that_needs_no_server(url):
    # The production settings refuse it before any check runs, naming the variable.
    code, output = check_deploy({**GOOD, "CELERY_BROKER_URL": url})
    assert code != 0
    assert "ImproperlyConfigured" in output
    assert "CELERY_BROKER_URL" in output


@pytest.mark.parametrize(
    ("url", "ids"),
    [
        ("sqla+sqlite:///var/celery.sqlite3", ["partner.E003"]),
        ("sqlalchemy+sqlite:////srv/broker.sqlite3", ["partner.E003"]),
        ("filesystem://", ["partner.E003"]),
        ("memory://", ["partner.E003"]),
        ("redis://redis-a.example:6379/0;memory://", ["partner.E003"]),
        ("redis://redis-a.example:6379/0", []),
        ("amqp://partner:pw@rabbit.example//", []),
        ("sqla+postgresql://partner:pw@db.example/partner", []),
    ],
)
def test_broker_check_catches_a_settings_module_that_sets_a_serverless_broker(settings, url, ids):
    # partner.E003 stays for what the start-up refusal cannot see: a value set after base.
    settings.CELERY_BROKER_URL = url
    errors = checks.broker_check()
    assert [e.id for e in errors] == ids
    assert all("CELERY_BROKER_URL" in e.msg and "redis://" in e.hint for e in errors)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SVC_CLIENT_SECRET", DEMO_CLIENT_SECRET),
        ("SVC_SIGNING_SECRETS", DEMO_SIGNING_SECRET),
        ("DJANGO_SECRET_KEY", "local-development-only-not-secret"),
        ("FIELD_ENCRYPTION_KEYS", "bG9jYWwtZGV2LW9ubHkta2V5LW5vdC1zZWNyZXQtMDA="),
    ],
)
def test_check_deploy_refuses_a_demo_secret(name, value):
    code, output = check_deploy({**GOOD, name: value})
    assert code != 0
    assert "ImproperlyConfigured" in output
    assert name in output


def test_dot_env_file_alone_cannot_mount_the_sandbox(tmp_path):
    env_file = tmp_path / "dot.env"
    env_file.write_text((ROOT / ".env.example").read_text() + "\nSANDBOX_ENABLED=true\n")
    code, output = check_deploy(
        {**GOOD, "DJANGO_READ_DOT_ENV_FILE": "true", "DJANGO_ENV_FILE": str(env_file)},
    )
    assert "partner.E002" not in output
    assert code == 0, output


def test_the_checks_know_the_settings_demo_values():
    # The checks' list of demo values is the local runs' defaults (config/settings/local.py).
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SVC_CLIENT_ID, s.SVC_CLIENT_SECRET, *s.SVC_SIGNING_SECRETS, s.SECRET_KEY, *s.FIELD_ENCRYPTION_KEYS)"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
        env=django_env({}),
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    client_id, client_secret, signing_secret, secret_key, field_key = result.stdout.split()
    assert client_id == checks.SANDBOX_CLIENT_ID
    assert client_secret == checks.SANDBOX_CLIENT_SECRET
    assert signing_secret == checks.SANDBOX_SIGNING_SECRET
    assert secret_key == checks.LOCAL_SECRET_KEY
    assert field_key == checks.LOCAL_FIELD_ENCRYPTION_KEY


def production_settings(settings):
    """In-process settings as config/settings/production.py would make them."""
    settings.DEBUG = False
    settings.SANDBOX_ENABLED = False
    settings.SECRET_KEY = "x" * 50
    settings.FIELD_ENCRYPTION_KEYS = [PRODUCTION["FIELD_ENCRYPTION_KEYS"]]
    settings.SVC_CLIENT_ID = GOOD["SVC_CLIENT_ID"]
    settings.SVC_CLIENT_SECRET = PRODUCTION["SVC_CLIENT_SECRET"]
    settings.SVC_SIGNING_SECRETS = [GOOD["SVC_SIGNING_SECRETS"]]


def test_demo_values_check_names_each_variable_not_its_value(settings):
    production_settings(settings)
    assert checks.demo_values_check() == []
    settings.SVC_CLIENT_SECRET = DEMO_CLIENT_SECRET
    settings.SVC_SIGNING_SECRETS = ["a-real-signing-secret-2b9e", DEMO_SIGNING_SECRET]
    errors = checks.demo_values_check()
    assert {e.id for e in errors} == {"partner.E001"}
    assert sorted(e.msg.split()[0] for e in errors) == ["SVC_CLIENT_SECRET", "SVC_SIGNING_SECRETS"]
    assert all(e.hint for e in errors)
    for error in errors:
        assert DEMO_CLIENT_SECRET not in error.msg and "a-real-signing-secret-2b9e" not in error.msg


@pytest.mark.django_db
def test_demo_signing_secret_is_an_error_with_debug_off_even_when_products_have_their_own(settings):
    # Item 6: the catalog's check used to go quiet once every product had its own secret, yet every
    # secret is accepted for every webhook, so the public one still signs for all of them.
    production_settings(settings)
    settings.SVC_SIGNING_SECRETS = [DEMO_SIGNING_SECRET]
    product_create(credentials=False, signing_secret="its-own-secret-4d2a")
    # The catalog's checks only: Django's URL checks would load the URLconf under this test's SANDBOX_ENABLED.
    errors = [m for m in run_checks(tags=["catalog"]) if isinstance(m, Error) and m.id == "catalog.E001"]
    assert len(errors) == 1
    assert "SVC_SIGNING_SECRETS" in errors[0].msg
    assert DEMO_SIGNING_SECRET not in errors[0].msg
    # Even with the sandbox mounted (partner.E002 covers the sandbox itself).
    settings.SANDBOX_ENABLED = True
    assert [m.id for m in signing_secrets_demo_check()] == ["catalog.E001"]


def test_demo_signing_secret_is_fine_in_local_runs(settings):
    settings.DEBUG = True
    settings.SVC_SIGNING_SECRETS = [DEMO_SIGNING_SECRET]
    assert signing_secrets_demo_check() == []


def test_partner_checks_are_deploy_checks_only():
    # `make run` and `make test` (SQLite, the local SQLite broker, the sandbox) are untouched by the preflight.
    from django.core.checks.registry import registry

    deploy_only = registry.get_checks(include_deployment_checks=True)
    for function in (
        checks.demo_values_check,
        checks.sandbox_check,
        checks.broker_check,
        checks.database_check,
        checks.cache_check,
        checks.addresses_check,
    ):
        assert function in deploy_only
        assert function not in registry.get_checks(include_deployment_checks=False)
