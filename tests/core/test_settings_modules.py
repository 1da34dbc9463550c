"""The settings modules: which one each command picks, production without the sandbox, and importing
settings makes no file and changes no environment variable (config/settings/).

What a process's start decides (its settings module, its app registry and tables, the metrics
library) is tested in a new process (`cold_start`, left out of `make test-quick`); what the settings
hold, in this process (tests/helpers/settings_in_process.py).
"""

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import Resolver404, resolve

from tests.helpers.processes import PRODUCTION, ROOT, django_env, run_django
from tests.helpers.settings_in_process import settings_import_changes, settings_read, urls_read

SANDBOX_ABSENT = (
    "import django; django.setup(); from django.apps import apps; from django.conf import settings; "
    "from django.contrib import admin; from django.urls import Resolver404, resolve\n"
    "try:\n    resolve('/sandbox/host/'); mounted = True\nexcept Resolver404:\n    mounted = False\n"
    "print(json.dumps({'module': settings.SETTINGS_MODULE, 'installed': 'partner.sandbox' in settings.INSTALLED_APPS, "
    "'app': apps.is_installed('partner.sandbox'), 'mounted': mounted, "
    "'admin': sorted({m._meta.app_label for m in admin.site._registry}), 'enabled': settings.SANDBOX_ENABLED}))"
)


def run_json(env_overrides, code):
    result = run_django(env_overrides, "import json\n" + code)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.cold_start
def test_production_settings_load_without_the_sandbox():
    # Started as gunicorn starts it (`import config.wsgi`: the preflight at start, the middleware): a
    # production start that goes through, which the tests of its refusals read in their own process.
    report = run_json(PRODUCTION, "import config.wsgi\n" + SANDBOX_ABSENT)
    assert report["module"] == "config.settings.production"
    assert report["installed"] is False and report["app"] is False and report["enabled"] is False
    assert report["mounted"] is False
    assert "sandbox" not in report["admin"]
    assert "fulfillment" in report["admin"]  # the admin itself is there


@pytest.mark.cold_start
def test_production_migrations_leave_the_sandbox_tables_out(tmp_path):
    env = {**PRODUCTION, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    code = (
        "import django; django.setup(); from django.core.management import call_command; "
        "call_command('migrate', verbosity=0); from django.db import connection; "
        "print(json.dumps(sorted(t for t in connection.introspection.table_names() if t.startswith('sandbox_'))))"
    )
    assert run_json(env, code) == []


def sandbox_report(env_overrides) -> dict:
    """Whether the settings of a process with this environment install the sandbox and its URL map mounts it."""
    read = settings_read(env_overrides)
    try:
        resolve("/sandbox/host/", urlconf=urls_read(read))
        mounted = True
    except Resolver404:
        mounted = False
    return {"installed": "partner.sandbox" in read.INSTALLED_APPS, "enabled": read.SANDBOX_ENABLED, "mounted": mounted}


def test_the_sandbox_is_installed_in_local_runs_and_not_when_turned_off():
    assert sandbox_report({}) == {"installed": True, "enabled": True, "mounted": True}
    # This process's settings are local's too (config/settings/test.py): its app and admin pages are there.
    assert apps.is_installed("partner.sandbox")
    assert "sandbox" in {model._meta.app_label for model in admin.site._registry}
    assert sandbox_report({"SANDBOX_ENABLED": "false"}) == {"installed": False, "enabled": False, "mounted": False}


def test_production_installs_the_sandbox_only_when_the_process_environment_asks():
    assert sandbox_report({**PRODUCTION, "SANDBOX_ENABLED": "true"}) == {
        "installed": True,
        "enabled": True,
        "mounted": True,
    }
    # Without it: test_production_settings_load_without_the_sandbox, in a process of its own.
    assert sandbox_report(PRODUCTION) == {"installed": False, "enabled": False, "mounted": False}


@pytest.mark.cold_start
def test_the_server_entry_points_default_to_production_and_manage_py_to_local():
    # A deployment that forgets DJANGO_SETTINGS_MODULE gets production's refusals, never local settings.
    env = {k: v for k, v in django_env({}).items() if k != "DJANGO_SETTINGS_MODULE"}
    for entry in ("config.wsgi", "config.asgi", "config.celery"):
        # The web entry points refuse when imported (as a server does); the Celery app when its
        # worker starts (the preflight at start, config/celery.py), and its settings are production's.
        code = f"import {entry}; from django.conf import settings; print(settings.SETTINGS_MODULE)"
        if entry == "config.celery":
            code += "; import django; django.setup()"
            code += "; from partner.core.checks import preflight_at_start; preflight_at_start()"
        result = subprocess.run(
            [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); {code}"],
            env=env,
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode != 0, entry
        assert "DJANGO_SECRET_KEY is required in production" in result.stderr, entry
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings; print(settings.SETTINGS_MODULE)",
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.split()[-1:] == ["config.settings.local"], result.stderr


def test_importing_settings_makes_no_file_and_changes_no_environment_variable(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = tmp_path / "files"
    files.mkdir()
    env_file = tmp_path / "dot.env"
    env_file.write_text("LOG_LEVEL=WARNING\nSANDBOX_ENABLED=true\n")
    # Every place a setting names, in a folder of the test's own (the repository's var/ has local runs' files).
    places = {
        "DATABASE_URL": f"sqlite:///{files / 'db.sqlite3'}",
        "CACHE_URL": f"filecache://{files / 'cache'}",
        "MEDIA_ROOT": str(files / "media"),
        "PROMETHEUS_MULTIPROC_DIR": str(files / "metrics"),
        "DJANGO_READ_DOT_ENV_FILE": "true",
        "DJANGO_ENV_FILE": str(env_file),
    }
    cases = {
        "config.settings.local": {**places, "CELERY_BROKER_URL": f"sqla+sqlite:///{files / 'broker.sqlite3'}"},
        "config.settings.test": {
            **places,
            "CELERY_BROKER_URL": f"sqla+sqlite:///{files / 'broker.sqlite3'}",
            "TEST_RUN_ID": f"settings-import-{uuid.uuid4().hex}",  # not this run's: its folder exists
        },
        "config.settings.production": {**PRODUCTION, **places},
    }
    for module, env in cases.items():
        read, environ_changed = settings_import_changes({**env, "DJANGO_SETTINGS_MODULE": module})
        assert environ_changed == [], module
        assert read.LOG_LEVEL == "WARNING", module  # the .env file was read, into the settings only
        assert list(files.iterdir()) == [], module
        assert sorted(p.name for p in tmp_path.iterdir()) == ["dot.env", "files"], module
        if module.endswith(".test"):  # the test settings' run folder (under var/test-runs/) is made by the suite
            assert not Path(read.RUN_DIR).exists(), module


@pytest.mark.cold_start
def test_the_metrics_library_counts_across_processes_once_django_has_started(tmp_path):
    # The folder is named to the library when Django starts (partner/core/apps.py), before the first
    # module that counts is imported: every metric then writes to the shared folder.
    code = (
        "import django, os; django.setup(); from prometheus_client import values; "
        "print(json.dumps({'dir': os.environ.get('PROMETHEUS_MULTIPROC_DIR'), "
        "'multiprocess': values.ValueClass is not values.MutexValue, "
        f"'made': os.path.isdir({str(tmp_path / 'metrics')!r})}}))"
    )
    report = run_json({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}, code)
    assert report == {"dir": str(tmp_path / "metrics"), "multiprocess": True, "made": True}
