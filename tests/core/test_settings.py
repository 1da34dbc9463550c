"""Settings: bad configuration stops start-up with a message that names the problem; production
refuses the values of local runs and leaves the sandbox out; importing settings makes nothing.

Each case starts Python in a subprocess with a controlled environment (no `.env` read unless the test
writes one): `config.settings.local` unless the case names another (PRODUCTION names production).
"""

import sqlite3

import pytest

from tests.helpers.processes import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_SIGNING_SECRET,
    PRODUCTION,
    ROOT,
    SETTINGS,
    run_django,
)

# Django started cold in another process (`make test` runs them, `make test-quick` leaves them out).
pytestmark = pytest.mark.cold_start


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


# The sandbox's public demo values (config/settings/local.py, partner/sandbox/tokens.py): the defaults of
# local runs, known to anyone who has read the code.


def test_debug_mode_keeps_the_sandbox_demo_values():
    code = SETTINGS + "print(s.SVC_CLIENT_ID, s.SVC_CLIENT_SECRET, *s.SVC_SIGNING_SECRETS, s.SANDBOX_ENABLED)"
    result = run_django({"DJANGO_DEBUG": "true"}, code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, DEMO_SIGNING_SECRET, "True"]


def test_production_has_no_default_signing_secret():
    # Products may have their own secrets only: no list at all is allowed, the demo one is never filled in.
    result = run_django(PRODUCTION, SETTINGS + "print(repr(s.SVC_SIGNING_SECRETS))")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_production_refuses_the_demo_signing_secret():
    for value in (DEMO_SIGNING_SECRET, f"a-real-signing-secret,{DEMO_SIGNING_SECRET}"):
        result = run_django({**PRODUCTION, "SVC_SIGNING_SECRETS": value})
        assert result.returncode != 0, value
        assert "ImproperlyConfigured" in result.stderr
        assert "SVC_SIGNING_SECRETS" in result.stderr


def test_production_refuses_the_demo_client_secret_even_with_the_sandbox():
    for sandbox in ("false", "true"):
        result = run_django({**PRODUCTION, "SVC_CLIENT_SECRET": DEMO_CLIENT_SECRET, "SANDBOX_ENABLED": sandbox})
        assert result.returncode != 0, sandbox
        assert "SVC_CLIENT_SECRET" in result.stderr


def test_production_requires_a_client_secret_even_with_the_sandbox():
    env = {k: v for k, v in PRODUCTION.items() if k != "SVC_CLIENT_SECRET"}
    result = run_django({**env, "SANDBOX_ENABLED": "true"})
    assert result.returncode != 0
    assert "SVC_CLIENT_SECRET is required" in result.stderr


def test_production_refuses_the_local_development_keys():
    cases = {
        "DJANGO_SECRET_KEY": "local-development-only-not-secret",
        "FIELD_ENCRYPTION_KEYS": "bG9jYWwtZGV2LW9ubHkta2V5LW5vdC1zZWNyZXQtMDA=",
    }
    for name, value in cases.items():
        result = run_django({**PRODUCTION, name: value})
        assert result.returncode != 0, name
        assert name in result.stderr


def test_production_start_up_messages_do_not_echo_the_secret():
    result = run_django({**PRODUCTION, "SVC_SIGNING_SECRETS": f"secret-of-ours-91f2,{DEMO_SIGNING_SECRET}"})
    assert result.returncode != 0
    assert "secret-of-ours-91f2" not in result.stderr


def write_env_file(tmp_path, text):
    path = tmp_path / "dot.env"
    path.write_text(text)
    return {"DJANGO_READ_DOT_ENV_FILE": "true", "DJANGO_ENV_FILE": str(path)}


def test_dot_env_file_cannot_mount_the_sandbox_in_production(tmp_path):
    # What `make setup` writes (a copy of .env.example), then DJANGO_DEBUG=false from the process
    # environment; or the file itself edited to say DJANGO_DEBUG=false.
    for debug_in_file in ("", "DJANGO_DEBUG=false\n"):
        file_env = write_env_file(tmp_path, f"{debug_in_file}SANDBOX_ENABLED=true\nLOG_LEVEL=WARNING\n")
        result = run_django({**PRODUCTION, **file_env}, SETTINGS + "print(s.SANDBOX_ENABLED, s.LOG_LEVEL)")
        assert result.returncode == 0, result.stderr
        # The file was read (LOG_LEVEL), its SANDBOX_ENABLED was not obeyed.
        assert result.stdout.split() == ["False", "WARNING"], debug_in_file


def test_dot_env_file_still_mounts_the_sandbox_in_local_runs(tmp_path):
    file_env = write_env_file(tmp_path, "DJANGO_DEBUG=true\nSANDBOX_ENABLED=true\n")
    result = run_django(file_env, SETTINGS + "print(s.DEBUG, s.SANDBOX_ENABLED)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "True"]


def test_process_environment_wins_over_dot_env_file(tmp_path):
    file_env = write_env_file(tmp_path, "SANDBOX_ENABLED=false\n")
    result = run_django({**PRODUCTION, **file_env, "SANDBOX_ENABLED": "true"}, SETTINGS + "print(s.SANDBOX_ENABLED)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


# The broker: the local runs' default needs no server; production refuses every such broker at start.


def test_debug_mode_defaults_to_the_local_sqlite_broker():
    code = SETTINGS + "print(s.CELERY_BROKER_URL); print(s.CELERY_RESULT_BACKEND)"
    result = run_django({"DJANGO_DEBUG": "true"}, code)
    assert result.returncode == 0, result.stderr
    broker, results = result.stdout.split()
    assert broker == f"sqla+sqlite:///{ROOT / 'var' / 'broker.sqlite3'}"
    assert results == f"db+sqlite:///{ROOT / 'var' / 'celery-results.sqlite3'}"


def test_debug_mode_opens_the_sqlite_broker_in_wal_mode_with_a_busy_timeout(tmp_path):
    url = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    code = SETTINGS + (
        "engine_connect = s.CELERY_BROKER_TRANSPORT_OPTIONS['creator']; db = engine_connect(); "
        "print(db.execute('PRAGMA journal_mode').fetchone()[0], db.execute('PRAGMA busy_timeout').fetchone()[0])"
    )
    result = run_django({"DJANGO_DEBUG": "true", "CELERY_BROKER_URL": url}, code)
    assert result.returncode == 0, result.stderr
    journal, busy_ms = result.stdout.split()
    assert journal == "wal"
    assert int(busy_ms) >= 5000


def test_the_celery_app_makes_the_sqlite_broker_when_it_is_configured(tmp_path):
    # Not the settings (importing them makes nothing): the Celery app of each process, when it first
    # reads its configuration, makes the file, kombu's tables and its default queue.
    broker = tmp_path / "broker.sqlite3"
    result = run_django(
        {"CELERY_BROKER_URL": f"sqla+sqlite:///{broker}"},
        "import django; django.setup(); import os; "
        f"print(os.path.exists({str(broker)!r})); "
        "from config.celery import app; app.conf.task_default_queue; print('configured')",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "configured"]
    with sqlite3.connect(broker) as db:
        assert db.execute("SELECT name FROM kombu_queue").fetchall() == [("celery",)]


@pytest.mark.parametrize(
    "url",
    [
        "filesystem://",
        "memory://",
        "sqla+sqlite:///var/broker.sqlite3",
        "sqlalchemy+sqlite:////srv/partner/broker.sqlite3",
        "SQLA+SQLITE:///var/broker.sqlite3",
        "redis://:broker-pw-7d1e@redis-a.example:6379/0;memory://",
    ],
)
def test_production_refuses_a_broker_that_needs_no_server(url):
    result = run_django({**PRODUCTION, "CELERY_BROKER_URL": url})
    assert result.returncode != 0, url
    assert "ImproperlyConfigured" in result.stderr
    assert "CELERY_BROKER_URL" in result.stderr
    assert "redis://" in result.stderr and "amqp://" in result.stderr
    assert "broker-pw-7d1e" not in result.stderr  # the URL is named, never echoed


def test_production_requires_a_broker_url():
    # No default with DJANGO_DEBUG off: the local one needs no server, and would be refused.
    env = {k: v for k, v in PRODUCTION.items() if k != "CELERY_BROKER_URL"}
    result = run_django(env)
    assert result.returncode != 0
    assert "CELERY_BROKER_URL is required" in result.stderr
    assert "redis://" in result.stderr and "amqp://" in result.stderr


def test_production_accepts_a_broker_server():
    for url in ("redis://:pw@redis.partner.example:6379/0", "amqp://partner:pw@rabbit.partner.example//"):
        result = run_django({**PRODUCTION, "CELERY_BROKER_URL": url}, SETTINGS + "print(s.CELERY_BROKER_URL)")
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == url


def test_documents_go_to_an_s3_bucket_when_asked():
    storage = 'from django.core.files.storage import storages; d = storages["default"]; '
    code = SETTINGS + storage + "print(type(d).__name__, d.bucket_name)"
    result = run_django({**PRODUCTION, "DOCUMENT_STORAGE": "s3", "DOCUMENTS_S3_BUCKET": "partner-docs"}, code)
    assert result.stdout.split()[-2:] == ["S3Storage", "partner-docs"], result.stderr
    missing = run_django({**PRODUCTION, "DOCUMENT_STORAGE": "s3"})
    assert "DOCUMENTS_S3_BUCKET" in missing.stderr
    unknown = run_django({**PRODUCTION, "DOCUMENT_STORAGE": "ftp"})
    assert "DOCUMENT_STORAGE must be filesystem (the default) or s3" in unknown.stderr


def test_the_urn_words_are_read_from_the_environment():
    code = SETTINGS + "print(s.SVC_URN_PREFIX, s.SVC_URN_PLATFORM, s.SVC_URN_HOST)"
    assert run_django({}, code).stdout.split() == ["urn:svc", "platform", "host"]
    words = {"SVC_URN_PREFIX": "urn:acme", "SVC_URN_PLATFORM": "lending", "SVC_URN_HOST": "desk-2"}
    result = run_django(
        {**PRODUCTION, **words}, code + "; from partner.platform import urns; print(urns.loan_urn('I', 'G'))"
    )
    assert result.stdout.split() == ["urn:acme", "lending", "desk-2", "urn:acme:desk-2:I:loan:G"], result.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SVC_URN_PREFIX", "urn:Acme"),
        ("SVC_URN_PREFIX", "acme"),
        ("SVC_URN_PREFIX", "urn:acme:lending"),
        ("SVC_URN_PREFIX", ""),
        ("SVC_URN_PLATFORM", "Lending"),
        ("SVC_URN_PLATFORM", "lending:desk"),
        ("SVC_URN_PLATFORM", ""),
        ("SVC_URN_HOST", "desk app"),
        ("SVC_URN_HOST", "desk_app"),
    ],
)
def test_a_wrong_urn_word_stops_startup_naming_its_variable(name, value):
    result = run_django({**PRODUCTION, name: value})
    assert result.returncode != 0
    assert "started" not in result.stdout
    assert "ImproperlyConfigured: 1 environment variable(s) cannot be used" in result.stderr
    assert f"- {name} must be " in result.stderr


@pytest.mark.parametrize("settings_module", ["config.settings.local", "config.settings.production"])
def test_every_unusable_value_is_named_at_once_and_none_is_echoed(settings_module):
    bad = {
        "LEASE_SECONDS": "fifteen-sekret",  # no digit: environ keeps only digits, "." and "-" of a float
        "CELERY_WORKER_CONCURRENCY": "many-sekret2",
        "RATELIMIT_API": "lots-sekret3",
        "LOG_FORMAT": "yaml-sekret4",
        "CACHE_URL": "bogus://sekret5",
        "DJANGO_SECURE_HSTS_SECONDS": "year-sekret6",  # read by production.py, after base
    }
    env = {**PRODUCTION, "DJANGO_SETTINGS_MODULE": settings_module, **bad}
    result = run_django(env)
    assert result.returncode != 0 and "started" not in result.stdout
    named = [line[2:].split(" ")[0] for line in result.stderr.splitlines() if line.startswith("- ")]
    expected = set(bad) - ({"DJANGO_SECURE_HSTS_SECONDS"} if settings_module.endswith("local") else set())
    assert set(named) == expected
    assert "sekret" not in result.stderr
