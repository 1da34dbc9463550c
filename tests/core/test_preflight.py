"""Production preflight: `manage.py check --deploy` fails, naming the problem, on what must not ship.

Each case reads the settings modules as a process with a controlled environment would (no `.env`
read unless the test writes one) and runs `check --deploy`, or the refusals of a start, on them in
this process (tests/helpers/settings_in_process.py), so what is checked is what a deployment would
start with. Three cases start Python cold, as an operator and the servers do (`cold_start`): one
`check --deploy` run, a web server's start and a worker's start refused.
"""

import string

import pytest
from django.core.checks import Error, run_checks
from django.core.exceptions import ImproperlyConfigured

from partner.catalog.checks import signing_secrets_demo_check
from partner.core import checks
from tests.helpers.processes import (
    DEMO_CLIENT_ID,
    DEMO_CLIENT_SECRET,
    DEMO_SIGNING_SECRET,
    PRODUCTION,
    ROOT,
    celery_worker_start,
    manage_check_deploy,
    run_django,
)
from tests.helpers.products import product_create
from tests.helpers.settings_in_process import check_deploy, settings_in_force, settings_read, start

# `check --deploy` reads the stored connections (connector.E001, E002): every case may touch the database.
pytestmark = pytest.mark.django_db

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
    "METRICS_TOKEN": "metrics-token-Hk3vW8qZ2pLx",
    "EMAIL_URL": "smtp+tls://partner:mail-password-1@smtp.partner.example:587",
    "DOCUMENT_STORAGE": "s3",
    "DOCUMENTS_S3_BUCKET": "partner-documents",
    "PARTNER_NAME": "Ridgeline Appraisal Co.",
    "PARTNER_ADDRESS": "12 Harbor Road",
    "PARTNER_CITY": "Portland",
    "PARTNER_STATE": "OR",
    "PARTNER_POSTAL_CODE": "97201",
    "PARTNER_PHONE": "503-555-0100",
    "PARTNER_EMAIL": "orders@ridgeline.example",
}


def partner_errors(output):
    return [line for line in output.splitlines() if "partner.E" in line or "catalog.E" in line]


def error_ids(output):
    """The ids of our errors, each once."""
    return {word.strip("():") for line in partner_errors(output) for word in line.split() if ".E0" in word}


def test_a_good_production_environment_passes():
    code, output = check_deploy(GOOD)
    # Django's own deploy warnings may remain; none of ours.
    assert partner_errors(output) == [], output
    assert code == 0, output
    # The OAuth server follows RFC 9700 as django-oauth-toolkit offers it: none of its warnings.
    assert "oauth2_provider." not in output, output


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
        pytest.param({"DJANGO_SECRET_KEY": "secret"}, "partner.E009", "DJANGO_SECRET_KEY", id="weak-secret-key"),
        pytest.param({"SVC_SIGNING_SECRETS": "a"}, "partner.E009", "SVC_SIGNING_SECRETS", id="weak-signing-secret"),
        pytest.param({"METRICS_TOKEN": "x"}, "partner.E009", "METRICS_TOKEN", id="one-character-metrics-token"),
        pytest.param(
            {"SVC_CLIENT_SECRET": "aaaaaaaaaaaaaaaaaaaa"}, "partner.E009", "SVC_CLIENT_SECRET", id="weak-client"
        ),
        # long, but repeated words or a sequence
        pytest.param({"SVC_SIGNING_SECRETS": "changeme-" * 6}, "partner.E009", "SVC_SIGNING_SECRETS", id="repeated"),
        pytest.param({"METRICS_TOKEN": "password1" * 6}, "partner.E009", "METRICS_TOKEN", id="repeated-password"),
        pytest.param(
            {"SVC_CLIENT_SECRET": string.ascii_lowercase + string.digits},
            "partner.E009",
            "SVC_CLIENT_SECRET",
            id="alphabet-and-digits",
        ),
        pytest.param({"DJANGO_SECRET_KEY": "keystone1" * 6}, "partner.E009", "DJANGO_SECRET_KEY", id="repeated-key"),
        pytest.param(
            {"FIELD_ENCRYPTION_KEYS": "not-a-fernet-key"}, "partner.E010", "FIELD_ENCRYPTION_KEYS", id="bad-key"
        ),
        pytest.param({"SVC_BASE_URL": "http://api.service.example"}, "partner.E011", "SVC_BASE_URL", id="http-base"),
        pytest.param(
            {"SVC_TOKEN_URL": "http://api.service.example/t"}, "partner.E011", "SVC_TOKEN_URL", id="http-token"
        ),
        pytest.param({"DJANGO_ALLOWED_HOSTS": "*"}, "partner.E012", "DJANGO_ALLOWED_HOSTS", id="any-host"),
        pytest.param({"TRUSTED_PROXIES": "0.0.0.0/0"}, "partner.E012", "TRUSTED_PROXIES", id="every-proxy"),
        pytest.param(
            {"METRICS_ALLOWED_NETWORKS": "::/0"}, "partner.E012", "METRICS_ALLOWED_NETWORKS", id="metrics-all"
        ),
        pytest.param(
            {"PARTNER_NAME": "Keystone Property Data, Inc."}, "partner.E013", "PARTNER_NAME", id="demo-company"
        ),
        pytest.param({"PARTNER_PHONE": ""}, "partner.E013", "PARTNER_PHONE", id="no-company-phone"),
        pytest.param({"EMAIL_URL": ""}, "partner.E014", "EMAIL_URL", id="console-email"),
        pytest.param(
            {"DOCUMENT_STORAGE": "filesystem", "DOCUMENTS_SINGLE_HOST": "false"},
            "partner.E015",
            "DOCUMENT_STORAGE",
            id="documents-on-disk",
        ),
        pytest.param(
            {"DOCUMENT_STORAGE": "filesystem", "DOCUMENTS_SINGLE_HOST": "true", "KUBERNETES_SERVICE_HOST": "10.0.0.1"},
            "partner.E015",
            "Kubernetes",
            id="documents-on-a-pods-disk",
        ),
        pytest.param({"DOCUMENTS_S3_BUCKET": ""}, "partner.E008", "DOCUMENTS_S3_BUCKET", id="no-bucket"),
        pytest.param({"TRUSTED_PROXIES": "0.0.0.0/1,128.0.0.0/1"}, "partner.E012", "TRUSTED_PROXIES", id="halves"),
        pytest.param({"METRICS_ALLOWED_NETWORKS": "::/1"}, "partner.E012", "METRICS_ALLOWED_NETWORKS", id="v6-half"),
        pytest.param({"DJANGO_SECURE_HSTS_SECONDS": "0"}, "partner.E016", "DJANGO_SECURE_HSTS_SECONDS", id="no-hsts"),
        pytest.param(
            {"DJANGO_SECURE_SSL_REDIRECT": "false"}, "partner.E016", "DJANGO_SECURE_SSL_REDIRECT", id="no-redirect"
        ),
        pytest.param(
            {"DJANGO_CSRF_TRUSTED_ORIGINS": "http://partner.example.com"},
            "partner.E016",
            "DJANGO_CSRF_TRUSTED_ORIGINS",
            id="http-csrf-origin",
        ),
        pytest.param({"CONNECTOR_TOKEN_SECONDS": "31536000"}, "partner.E016", "CONNECTOR_TOKEN_SECONDS", id="year"),
        pytest.param({"CONNECTOR_SEND_TIMEOUT": "600"}, "partner.E016", "CONNECTOR_SEND_TIMEOUT", id="send-600s"),
        pytest.param({"RATELIMIT_API_TOKEN": "100000/m"}, "partner.E016", "RATELIMIT_API_TOKEN", id="huge-rate"),
        pytest.param(
            {"CONNECTOR_ENDPOINT_NETWORKS": "10.20.0.0/16,0.0.0.0/0"},
            "partner.E016",
            "CONNECTOR_ENDPOINT_NETWORKS",
            id="endpoint-networks-everything",
        ),
        pytest.param(
            {"CONNECTOR_ENDPOINT_NETWORKS": "intranet"},
            "partner.E016",
            "CONNECTOR_ENDPOINT_NETWORKS",
            id="endpoint-networks-not-a-network",
        ),
    ],
)
def test_check_deploy_fails_on(overrides, check_id, words):
    code, output = check_deploy({**GOOD, **overrides})
    assert code != 0, output
    errors = partner_errors(output)
    assert [line for line in errors if check_id in line and words in line], output


def test_a_real_company_in_the_demo_companys_city_passes():
    """The demo company is told by its name, address, phone and e-mail: not by a city or ZIP code."""
    code, output = check_deploy({**GOOD, "PARTNER_CITY": "San Francisco", "PARTNER_POSTAL_CODE": "94105"})
    assert "partner.E013" not in output and code == 0, output


def test_check_deploy_with_the_local_defaults_names_every_problem():
    # Production settings and nothing else but what start-up requires: the preflight lists it all.
    # (Start-up requires a broker server and no demo secret, so E001 and E003 cannot be reached
    # from this environment: see below.)
    local = {key: value for key, value in PRODUCTION.items() if not key.startswith(("PARTNER_", "DOCUMENTS_"))}
    code, output = check_deploy({**local, "SANDBOX_ENABLED": "true"})
    assert code != 0
    ids = {f"partner.E00{n}" for n in (2, 4, 5, 6, 7)} | {"partner.E013", "partner.E014", "partner.E015"}
    found = {check_id for check_id in ids if check_id in output}
    assert found == ids, output


# One configuration with every mistake at once: production settings still load, and one
# `check --deploy` run reports each problem as a system-check error with its hint, never a traceback.
EVERYTHING_WRONG = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    # DJANGO_SECRET_KEY, SVC_CLIENT_SECRET and CELERY_BROKER_URL missing, PARTNER_* and EMAIL_URL unset.
    "DJANGO_ALLOWED_HOSTS": "*",
    "FIELD_ENCRYPTION_KEYS": "not-a-fernet-key,bG9jYWwtZGV2LW9ubHkta2V5LW5vdC1zZWNyZXQtMDA=",  # the local key too
    "SVC_SIGNING_SECRETS": "a",
    "SVC_BASE_URL": "http://api.service.example",
    "TRUSTED_PROXIES": "0.0.0.0/0",
    "METRICS_ALLOWED_NETWORKS": "0.0.0.0/0",
    "METRICS_TOKEN": "x",
    "DATABASE_URL": "sqlite:////srv/partner/db.sqlite3",
    "CACHE_URL": "locmemcache://",
    "HOST_ORIGINS": "http://host.lender.example",
    "PUBLIC_BASE_URL": "http://partner.example.com",
    "SVC_CLIENT_ID": DEMO_CLIENT_ID,
    "CONNECTOR_SEND_TIMEOUT": "600",
}
EVERYTHING_WRONG_NAMES = [
    "DJANGO_SECRET_KEY",
    "SVC_CLIENT_SECRET",
    "CELERY_BROKER_URL",
    "DJANGO_ALLOWED_HOSTS",
    "FIELD_ENCRYPTION_KEYS",
    "SVC_SIGNING_SECRETS",
    "SVC_BASE_URL",
    "SVC_TOKEN_URL",
    "TRUSTED_PROXIES",
    "METRICS_ALLOWED_NETWORKS",
    "METRICS_TOKEN",
    "DATABASE_URL",
    "CACHE_URL",
    "HOST_ORIGINS",
    "PUBLIC_BASE_URL",
    "SVC_CLIENT_ID",
    "PARTNER_NAME",
    "EMAIL_URL",
    "DOCUMENT_STORAGE",
    "CONNECTOR_SEND_TIMEOUT",
]


@pytest.mark.cold_start
def test_one_check_deploy_run_reports_every_problem_of_a_configuration():
    # As an operator runs it: a new process (`make test-quick` leaves it out).
    code, output = manage_check_deploy(EVERYTHING_WRONG)
    assert code != 0
    assert "Traceback" not in output and "ImproperlyConfigured" not in output, output
    expected = {"partner.E001", *(f"partner.E0{n:02d}" for n in (4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))}
    assert expected <= error_ids(output), output
    errors = "\n".join(partner_errors(output))
    for name in EVERYTHING_WRONG_NAMES:
        assert name in errors, name
    assert output.count("HINT:") >= len(partner_errors(output))
    assert "not-a-fernet-key" not in output  # named, never echoed


@pytest.mark.cold_start
def test_a_server_refuses_to_start_listing_every_start_error_at_once():
    result = run_django(EVERYTHING_WRONG)  # `import config.wsgi`, as gunicorn does
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "Refusing to start" in result.stderr
    for check_id in ("partner.E001", "partner.E008", "partner.E009", "partner.E010", "partner.E011"):
        assert check_id in result.stderr, check_id
    for name in (
        "DJANGO_SECRET_KEY",
        "SVC_CLIENT_SECRET",
        "CELERY_BROKER_URL",
        "FIELD_ENCRYPTION_KEYS",
        "SVC_BASE_URL",
    ):
        assert name in result.stderr, name
    assert "not-a-fernet-key" not in result.stderr


@pytest.mark.cold_start
def test_a_celery_worker_refuses_to_start_on_the_preflight():
    env = {k: v for k, v in PRODUCTION.items() if k != "DJANGO_SECRET_KEY"}
    env["CELERY_BROKER_URL"] = "redis://127.0.0.1:1/0"  # never reached: refused before connecting
    result = celery_worker_start(env)
    assert result.returncode != 0
    assert "partner.E008" in result.stderr and "DJANGO_SECRET_KEY" in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("unsafe", "check_id", "named"),
    [
        # PARTNER_* left out: the demo company's name, address, phone and e-mail.
        pytest.param(
            {"PARTNER_NAME": None, "PARTNER_PHONE": None, "PARTNER_EMAIL": None},
            "partner.E013",
            "PARTNER_PHONE",
            id="demo-company",
        ),
        pytest.param({"DOCUMENTS_SINGLE_HOST": "false"}, "partner.E015", "DOCUMENT_STORAGE", id="unshared-documents"),
        pytest.param({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "partner.E015", "Kubernetes", id="documents-on-a-pod"),
    ],
)
def test_web_and_worker_refuse_to_start_on_the_demo_company_or_unshared_documents(unsafe, check_id, named, capsys):
    from config.celery import _preflight as worker_preflight  # what a worker and the scheduler run at start

    env = {key: value for key, value in {**PRODUCTION, **unsafe}.items() if value is not None}
    start(PRODUCTION)  # the same environment, safe, starts
    with pytest.raises(ImproperlyConfigured) as web:
        start(env)
    assert "Refusing to start" in str(web.value)
    assert check_id in str(web.value) and named in str(web.value), web.value
    with settings_in_force(settings_read(env)), pytest.raises(SystemExit) as worker:
        worker_preflight()
    assert worker.value.code != 0 and check_id in capsys.readouterr().err


def test_the_local_settings_never_run_the_preflight_at_start():
    assert start({}).PREFLIGHT_AT_START is False


@pytest.mark.parametrize(
    ("value", "weak"),
    [
        ("secret", True),
        ("a", True),
        ("x" * 60, True),
        ("abababababababababababab", True),
        ("changeme-" * 6, True),
        ("password1" * 6, True),
        ("keystone1" * 3, True),
        ("keystone1" * 6, True),
        (string.ascii_lowercase + string.digits, True),
        (string.digits + string.ascii_letters, True),
        ("zyxwvutsrqponmlkjihgfedcba9876543210", True),
        ("4mX_9qLr-TzW2vKp", False),  # secrets.token_urlsafe(12)
        ("a-real-signing-secret-2b9e", False),
        ("tests-Q7vR2mXk9LpZ4sWc8NbY3hJd6FgT1aUe5oIq0rEy-secret-key", False),
    ],
)
def test_secret_weakness(value, weak):
    assert (checks.secret_weakness(value) is not None) is weak


def test_a_secret_key_must_be_as_long_as_django_asks():
    assert checks.secret_weakness("Q7vR2mXk9LpZ4sWc8NbY3hJd", min_length=checks.SECRET_KEY_MIN_LENGTH)


def test_loopback_http_is_allowed_only_where_the_service_is_an_emulator_here(settings):
    settings.DEBUG = False
    settings.SVC_BASE_URL = "http://127.0.0.1:8000/sandbox"
    settings.SVC_TOKEN_URL = "https://api.service.example/token"
    settings.SVC_UPLOAD_LOCATION_STRICT = True
    settings.SANDBOX_ENABLED = True
    assert checks.service_addresses_check() == []
    settings.SANDBOX_ENABLED = False
    assert [e.id for e in checks.service_addresses_check()] == ["partner.E011"]
    settings.SVC_BASE_URL = "http://api.service.example"
    settings.SANDBOX_ENABLED = True
    assert [e.id for e in checks.service_addresses_check()] == ["partner.E011"]
    # A worker of a test or benchmark against the emulator of another process or host: its settings
    # module turns the strict rule off (no variable of the environment can).
    settings.SANDBOX_ENABLED = False
    settings.SVC_UPLOAD_LOCATION_STRICT = False
    assert checks.service_addresses_check() == []
    settings.DEBUG = True
    assert checks.service_addresses_check() == []


@pytest.mark.parametrize(
    "url",
    ["filesystem://", "memory://", "sqla+sqlite:///var/celery.sqlite3", "redis://redis-a.example:6379/0;memory://"],
)
def test_check_deploy_refuses_a_broker_that_needs_no_server(url):
    # The production settings load it; the preflight names it (and a server refuses to start: test_settings.py).
    code, output = check_deploy({**GOOD, "CELERY_BROKER_URL": url})
    assert code != 0
    assert [line for line in partner_errors(output) if "partner.E003" in line and "CELERY_BROKER_URL" in line]


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


@pytest.mark.django_db  # catalog.W001 reads the products (a new process: an unreachable database)
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
    assert [line for line in partner_errors(output) if "partner.E001" in line and name in line], output
    assert "Traceback" not in output


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
    s = settings_read({})
    (signing_secret,), (field_key,) = s.SVC_SIGNING_SECRETS, s.FIELD_ENCRYPTION_KEYS
    client_id, client_secret, secret_key = s.SVC_CLIENT_ID, s.SVC_CLIENT_SECRET, s.SECRET_KEY
    assert client_id == checks.SANDBOX_CLIENT_ID
    assert client_secret == checks.SANDBOX_CLIENT_SECRET
    assert signing_secret == checks.SANDBOX_SIGNING_SECRET
    assert secret_key == checks.LOCAL_SECRET_KEY
    assert field_key == checks.LOCAL_FIELD_ENCRYPTION_KEY


def production_settings(settings):
    """In-process settings as config/settings/production.py would make them."""
    settings.DEBUG = False
    settings.SANDBOX_ENABLED = False
    settings.SECRET_KEY = PRODUCTION["DJANGO_SECRET_KEY"]
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
        checks.demo_client_id_check,
        checks.sandbox_check,
        checks.broker_check,
        checks.database_check,
        checks.cache_check,
        checks.addresses_check,
        checks.required_check,
        checks.secrets_strength_check,
        checks.encryption_keys_check,
        checks.service_addresses_check,
        checks.permissive_values_check,
        checks.partner_company_check,
        checks.email_check,
        checks.document_storage_check,
        checks.unsafe_values_check,
    ):
        assert function in deploy_only
        assert function not in registry.get_checks(include_deployment_checks=False)
