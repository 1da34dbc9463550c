"""Settings: bad configuration stops start-up with a message that names the problem; production
refuses the values of local runs and leaves the sandbox out; importing settings makes nothing.

Each case reads the settings modules as a process with a controlled environment would (no `.env`
read unless the test writes one): `config.settings.local` unless the case names another (PRODUCTION
names production), in this process (tests/helpers/settings_in_process.py). `start` raises what a
server's start refuses; the cases marked `cold_start` start Python, where only a new process shows it.
"""

import sqlite3

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.helpers.processes import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_SIGNING_SECRET,
    PRODUCTION,
    ROOT,
    run_django,
)
from tests.helpers.settings_in_process import settings_in_force, settings_read, start

# A start runs the preflight's checks, and the connector's read the stored connections.
pytestmark = pytest.mark.django_db


def refusal(env_overrides) -> str:
    """The message a server's start with this environment stops with (ImproperlyConfigured)."""
    with pytest.raises(ImproperlyConfigured) as refused:
        start(env_overrides)
    return str(refused.value)


def test_production_settings_start():
    assert start(PRODUCTION).SETTINGS_MODULE == "config.settings.production"


def test_missing_secret_key_in_production_stops_startup():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    assert "DJANGO_SECRET_KEY is required" in refusal(env)


def test_missing_allowed_hosts_in_production_stops_startup():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_ALLOWED_HOSTS"}
    assert "DJANGO_ALLOWED_HOSTS is required" in refusal(env)


def test_malformed_database_url_stops_startup_without_echoing_it():
    message = refusal({**PRODUCTION, "DATABASE_URL": "not a url:secretpw@@"})
    assert "DATABASE_URL" in message
    assert "secretpw" not in message


def test_unknown_database_scheme_stops_startup():
    assert "DATABASE_URL" in refusal({**PRODUCTION, "DATABASE_URL": "nosuchdb://u:p@h/x"})


def _database_options(env_overrides) -> dict:
    return settings_read({**PRODUCTION, **env_overrides}).DATABASES["default"].get("OPTIONS", {})


def test_postgresql_binds_the_parameters_on_the_server_unless_turned_off():
    # psycopg 3 sends the values apart from the statement (Django's `server_side_binding`), not quoted
    # into its text; DATABASE_SERVER_SIDE_BINDING=false turns it off (docs/deployment.md).
    postgresql = {"DATABASE_URL": "postgres://partner:pw@db.partner.example:5432/partner"}
    assert _database_options(postgresql) == {"server_side_binding": True}
    assert _database_options({**postgresql, "DATABASE_SERVER_SIDE_BINDING": "true"}) == {"server_side_binding": True}
    assert "server_side_binding" not in _database_options({**postgresql, "DATABASE_SERVER_SIDE_BINDING": "false"})
    # SQLite has no such option: its own are unchanged.
    sqlite = _database_options({"DATABASE_URL": "sqlite:////srv/partner/db.sqlite3"})
    assert "server_side_binding" not in sqlite
    assert sqlite["transaction_mode"] == "IMMEDIATE"


def test_postgresql_prepares_named_statements_only_when_asked():
    # Named prepared statements (psycopg's `prepare_threshold`) are off unless DATABASE_PREPARE_THRESHOLD
    # gives the executions before a statement is prepared: PgBouncer in transaction mode breaks with
    # them below 1.21 (docs/deployment.md). Only with the binding on the server: psycopg never
    # prepares what it binds on the client.
    postgresql = {"DATABASE_URL": "postgres://partner:pw@db.partner.example:5432/partner"}
    assert "prepare_threshold" not in _database_options(postgresql)
    assert "prepare_threshold" not in _database_options({**postgresql, "DATABASE_PREPARE_THRESHOLD": ""})
    assert _database_options({**postgresql, "DATABASE_PREPARE_THRESHOLD": "5"})["prepare_threshold"] == 5
    assert _database_options({**postgresql, "DATABASE_PREPARE_THRESHOLD": "0"})["prepare_threshold"] == 0
    unbound = {**postgresql, "DATABASE_SERVER_SIDE_BINDING": "false", "DATABASE_PREPARE_THRESHOLD": "5"}
    assert "prepare_threshold" not in _database_options(unbound)
    sqlite = {"DATABASE_URL": "sqlite:////srv/partner/db.sqlite3", "DATABASE_PREPARE_THRESHOLD": "5"}
    assert "prepare_threshold" not in _database_options(sqlite)


def test_a_malformed_prepare_threshold_stops_startup_without_echoing_it():
    postgresql = {"DATABASE_URL": "postgres://partner:pw@db.partner.example:5432/partner"}
    message = refusal({**PRODUCTION, **postgresql, "DATABASE_PREPARE_THRESHOLD": "often-secret"})
    assert "DATABASE_PREPARE_THRESHOLD" in message
    assert "often-secret" not in message


def test_the_suite_s_postgresql_connection_binds_on_the_server():
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite binds its parameters itself")
    assert connection.features.uses_server_side_binding
    with connection.cursor() as cursor:
        assert type(cursor.cursor).__name__ == "ServerBindingCursor"
        cursor.execute("SELECT %s::int + %s::int", [1, 2])
        assert cursor.fetchone() == (3,)


def test_production_defaults_are_safe():
    s = start(PRODUCTION)
    # The admin's session cookie stays same-site; only the embedded page's CSRF cookie crosses sites.
    # No proxy named: X-Forwarded-Proto is not believed.
    assert [s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS > 0, s.SANDBOX_ENABLED] == [
        True,
        True,
        True,
        False,
    ]
    assert [s.SESSION_COOKIE_SAMESITE, s.CSRF_COOKIE_SAMESITE, s.SECURE_PROXY_SSL_HEADER] == ["Lax", "None", None]


def test_sandbox_can_be_asked_for_in_production():
    assert settings_read({**PRODUCTION, "SANDBOX_ENABLED": "true"}).SANDBOX_ENABLED is True


def test_debug_mode_runs_without_secrets():
    start({"DJANGO_DEBUG": "true"})


# The sandbox's public demo values (config/settings/local.py, partner/sandbox/tokens.py): the defaults of
# local runs, known to anyone who has read the code.


def test_debug_mode_keeps_the_sandbox_demo_values():
    s = start({"DJANGO_DEBUG": "true"})
    assert [s.SVC_CLIENT_ID, s.SVC_CLIENT_SECRET, *s.SVC_SIGNING_SECRETS, s.SANDBOX_ENABLED] == [
        DEMO_CLIENT_ID,
        DEMO_CLIENT_SECRET,
        DEMO_SIGNING_SECRET,
        True,
    ]


def test_production_has_no_default_signing_secret():
    # Products may have their own secrets only: no list at all is allowed, the demo one is never filled in.
    assert start(PRODUCTION).SVC_SIGNING_SECRETS == []


def test_production_refuses_the_demo_signing_secret():
    for value in (DEMO_SIGNING_SECRET, f"a-real-signing-secret,{DEMO_SIGNING_SECRET}"):
        assert "SVC_SIGNING_SECRETS" in refusal({**PRODUCTION, "SVC_SIGNING_SECRETS": value}), value


def test_production_refuses_the_demo_client_secret_even_with_the_sandbox():
    for sandbox in ("false", "true"):
        env = {**PRODUCTION, "SVC_CLIENT_SECRET": DEMO_CLIENT_SECRET, "SANDBOX_ENABLED": sandbox}
        assert "SVC_CLIENT_SECRET" in refusal(env), sandbox


def test_production_requires_a_client_secret_even_with_the_sandbox():
    env = {k: v for k, v in PRODUCTION.items() if k != "SVC_CLIENT_SECRET"}
    assert "SVC_CLIENT_SECRET is required" in refusal({**env, "SANDBOX_ENABLED": "true"})


def test_production_refuses_the_local_development_keys():
    cases = {
        "DJANGO_SECRET_KEY": "local-development-only-not-secret",
        "FIELD_ENCRYPTION_KEYS": "bG9jYWwtZGV2LW9ubHkta2V5LW5vdC1zZWNyZXQtMDA=",
    }
    for name, value in cases.items():
        assert name in refusal({**PRODUCTION, name: value}), name


def test_production_start_up_messages_do_not_echo_the_secret():
    message = refusal({**PRODUCTION, "SVC_SIGNING_SECRETS": f"secret-of-ours-91f2,{DEMO_SIGNING_SECRET}"})
    assert "secret-of-ours-91f2" not in message


def write_env_file(tmp_path, text):
    path = tmp_path / "dot.env"
    path.write_text(text)
    return {"DJANGO_READ_DOT_ENV_FILE": "true", "DJANGO_ENV_FILE": str(path)}


def test_dot_env_file_cannot_mount_the_sandbox_in_production(tmp_path):
    # What `make setup` writes (a copy of .env.example), then DJANGO_DEBUG=false from the process
    # environment; or the file itself edited to say DJANGO_DEBUG=false.
    for debug_in_file in ("", "DJANGO_DEBUG=false\n"):
        file_env = write_env_file(tmp_path, f"{debug_in_file}SANDBOX_ENABLED=true\nLOG_LEVEL=WARNING\n")
        s = start({**PRODUCTION, **file_env})
        # The file was read (LOG_LEVEL), its SANDBOX_ENABLED was not obeyed.
        assert [s.SANDBOX_ENABLED, s.LOG_LEVEL] == [False, "WARNING"], debug_in_file


def test_dot_env_file_still_mounts_the_sandbox_in_local_runs(tmp_path):
    file_env = write_env_file(tmp_path, "DJANGO_DEBUG=true\nSANDBOX_ENABLED=true\n")
    s = start(file_env)
    assert [s.DEBUG, s.SANDBOX_ENABLED] == [True, True]


def test_process_environment_wins_over_dot_env_file(tmp_path):
    file_env = write_env_file(tmp_path, "SANDBOX_ENABLED=false\n")
    assert start({**PRODUCTION, **file_env, "SANDBOX_ENABLED": "true"}).SANDBOX_ENABLED is True


# The broker: the local runs' default needs no server; production refuses every such broker at start.


def test_debug_mode_defaults_to_the_local_sqlite_broker():
    s = start({"DJANGO_DEBUG": "true"})
    broker, results = s.CELERY_BROKER_URL, s.CELERY_RESULT_BACKEND
    assert broker == f"sqla+sqlite:///{ROOT / 'var' / 'broker.sqlite3'}"
    assert results == f"db+sqlite:///{ROOT / 'var' / 'celery-results.sqlite3'}"


def test_debug_mode_opens_the_sqlite_broker_in_wal_mode_with_a_busy_timeout(tmp_path):
    url = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    s = start({"DJANGO_DEBUG": "true", "CELERY_BROKER_URL": url})
    db = s.CELERY_BROKER_TRANSPORT_OPTIONS["creator"]()
    journal, busy_ms = db.execute("PRAGMA journal_mode").fetchone()[0], db.execute("PRAGMA busy_timeout").fetchone()[0]
    db.close()
    assert journal == "wal"
    assert int(busy_ms) >= 5000


@pytest.mark.cold_start  # a process's Celery app, configured once: a new process (`make test-quick` leaves it out)
def test_the_celery_app_makes_the_sqlite_broker_when_it_is_configured(tmp_path):
    # Not the settings (importing them makes nothing): the Celery app of each process, when it first
    # reads its configuration, makes the file, kombu's tables, its default queue and the events' queue.
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
        queues = db.execute("SELECT name FROM kombu_queue ORDER BY name").fetchall()
        assert queues == [("celery",), ("celery.events",), ("celery.runs",)]


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
    message = refusal({**PRODUCTION, "CELERY_BROKER_URL": url})
    assert "CELERY_BROKER_URL" in message
    assert "redis://" in message and "amqp://" in message
    assert "broker-pw-7d1e" not in message  # the URL is named, never echoed


def test_production_requires_a_broker_url():
    # No default with DJANGO_DEBUG off: the local one needs no server, and would be refused.
    env = {k: v for k, v in PRODUCTION.items() if k != "CELERY_BROKER_URL"}
    message = refusal(env)
    assert "CELERY_BROKER_URL is required" in message
    assert "redis://" in message and "amqp://" in message


def test_production_accepts_a_broker_server():
    for url in ("redis://:pw@redis.partner.example:6379/0", "amqp://partner:pw@rabbit.partner.example//"):
        s = start({**PRODUCTION, "CELERY_BROKER_URL": url})
        assert s.CELERY_BROKER_URL == url  # noqa: SIM300 - a setting read, not a constant


def test_documents_go_to_an_s3_bucket_when_asked():
    from django.core.files.storage import storages

    with settings_in_force(start({**PRODUCTION, "DOCUMENT_STORAGE": "s3", "DOCUMENTS_S3_BUCKET": "partner-docs"})):
        documents = storages["default"]
        assert [type(documents).__name__, documents.bucket_name] == ["S3Storage", "partner-docs"]
    assert "DOCUMENTS_S3_BUCKET" in refusal({**PRODUCTION, "DOCUMENT_STORAGE": "s3"})
    unknown = refusal({**PRODUCTION, "DOCUMENT_STORAGE": "ftp"})
    assert "DOCUMENT_STORAGE must be filesystem (the default) or s3" in unknown


def test_the_urn_words_are_read_from_the_environment():
    from partner.platform import urns

    s = start({})
    assert [s.SVC_URN_PREFIX, s.SVC_URN_PLATFORM, s.SVC_URN_HOST] == ["urn:svc", "platform", "host"]
    words = {"SVC_URN_PREFIX": "urn:acme", "SVC_URN_PLATFORM": "lending", "SVC_URN_HOST": "desk-2"}
    with settings_in_force(start({**PRODUCTION, **words})) as s:
        assert [s.SVC_URN_PREFIX, s.SVC_URN_PLATFORM, s.SVC_URN_HOST] == ["urn:acme", "lending", "desk-2"]
        assert urns.loan_urn("I", "G") == "urn:acme:desk-2:I:loan:G"


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
    message = refusal({**PRODUCTION, name: value})
    assert message.startswith("1 environment variable(s) cannot be used")
    assert f"- {name} must be " in message


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
    message = refusal(env)
    named = [line[2:].split(" ")[0] for line in message.splitlines() if line.startswith("- ")]
    expected = set(bad) - ({"DJANGO_SECURE_HSTS_SECONDS"} if settings_module.endswith("local") else set())
    assert set(named) == expected
    assert "sekret" not in message


def test_every_process_refuses_an_unusable_value_as_django_starts():
    # The refusal `start` raises is partner.core's, when Django starts any process (web, worker,
    # scheduler, manage.py): its app's ready() runs it before anything else.
    from django.apps import apps

    with settings_in_force(settings_read({"LEASE_SECONDS": "fifteen"})), pytest.raises(ImproperlyConfigured) as refused:
        apps.get_app_config("core").ready()
    assert "- LEASE_SECONDS is malformed" in str(refused.value)
