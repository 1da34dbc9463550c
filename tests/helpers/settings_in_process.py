"""A settings module read in this process as a process started with a given environment would read it,
and what a start and `manage.py check --deploy` do with those settings, without starting Python.

The settings decide when their module is imported: every variable is read at import, through the
reader of config/settings/environment.py, from the process environment (and a `.env` file when the
environment asks for one). So `settings_read` imports the settings modules afresh, with os.environ
for that moment exactly the environment a subprocess of tests/helpers/processes.py would have
(`django_env`), and builds Django's own `Settings` of them: Django's defaults under the module's
values, as `django.setup()` would. The modules this process runs on are put back afterwards,
untouched; the process environment too.

`settings_in_force` makes such settings django.conf.settings for a while, as `override_settings`
does (Django's and the libraries' caches of a setting are told), except INSTALLED_APPS: the app
registry stays this process's, the sandbox's app installed; the checks read SANDBOX_ENABLED. Then:

- `start`: the refusals of a server's start, raised as they are at start: the values the settings
  could not use (partner/core/apps.py), then the preflight at start (PREFLIGHT_AT_START,
  partner/core/checks.py).
- `check_deploy`: `manage.py check --deploy` run by `call_command`: its exit code and its output.
- `urls_read`: the URL map (config/urls.py) a process with such settings serves.

What only a new process shows (that a server's entry point runs these at all, the worker's signal,
the app registry of production) is tested cold, by tests/helpers/processes.py; so is a settings
module that starts something as it is read (Sentry, with SENTRY_DSN), which would start it here.
"""

import importlib
import os
import sys
import warnings
from contextlib import contextmanager
from io import StringIO
from unittest import mock

from django.conf import Settings, global_settings, settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from tests.helpers.processes import django_env

SETTINGS_PACKAGE = "config.settings"
URLCONF = "config.urls"
# Held out of `settings_in_force`: the app registry is this process's (the sandbox's app installed).
REGISTRY_SETTINGS = {"INSTALLED_APPS"}


@contextmanager
def _settings_modules_afresh(environ: dict):
    """The settings modules imported afresh within the block, with os.environ exactly `environ`; this
    process's modules and environment put back after it."""
    package = sys.modules[SETTINGS_PACKAGE]
    ours = {name: module for name, module in sys.modules.items() if name.startswith(f"{SETTINGS_PACKAGE}.")}
    for name in ours:
        del sys.modules[name]
    try:
        with mock.patch.dict(os.environ, environ, clear=True):
            yield
    finally:
        for name in [name for name in sys.modules if name.startswith(f"{SETTINGS_PACKAGE}.")]:
            del sys.modules[name]
        sys.modules.update(ours)
        for name, module in ours.items():
            setattr(package, name.rpartition(".")[2], module)


def settings_read(env_overrides: dict) -> Settings:
    """The settings of a process started with `django_env(env_overrides)`: its DJANGO_SETTINGS_MODULE
    (local unless named) imported afresh under exactly that environment. Raises what the import raises."""
    environ = django_env(env_overrides)
    with _settings_modules_afresh(environ):
        return Settings(environ["DJANGO_SETTINGS_MODULE"])


def settings_import_changes(env_overrides: dict) -> tuple[Settings, list[str]]:
    """`settings_read`, and the variables of the process environment that importing the settings
    module changed (Django's own `Settings` sets TZ afterwards: not the module's doing)."""
    environ = django_env(env_overrides)
    with _settings_modules_afresh(environ):
        importlib.import_module(environ["DJANGO_SETTINGS_MODULE"])
        changed = sorted(name for name in set(environ) | set(os.environ) if environ.get(name) != os.environ.get(name))
        return Settings(environ["DJANGO_SETTINGS_MODULE"]), changed


def _changed(read: Settings) -> dict:
    """Every setting whose value in `read` is not this process's: a setting `read` does not have
    (one of the test settings') goes back to Django's default, or stays when Django has none."""
    names = {name for name in dir(read) if name.isupper()} | {name for name in dir(settings) if name.isupper()}
    changed = {}
    for name in names - REGISTRY_SETTINGS:
        if hasattr(read, name):
            value = getattr(read, name)
        elif hasattr(global_settings, name):
            value = getattr(global_settings, name)
        else:
            continue
        try:
            same = getattr(settings._wrapped, name, object()) == value
        except Exception:  # a value that cannot be compared: told anyway
            same = False
        if not same:
            changed[name] = value
    return changed


@contextmanager
def settings_in_force(read: Settings):
    """`read` as django.conf.settings until the block ends (but INSTALLED_APPS: this process's registry)."""
    with warnings.catch_warnings():
        # DATABASES: the connections stay this process's; the checks read the setting only.
        warnings.filterwarnings("ignore", message="Overriding setting DATABASES")
        with override_settings(**_changed(read)):
            yield read


def _harness_env() -> dict:
    """What this test process needs kept whatever environment it plays: Django's permission to query
    beside the browser tests' event loop (tests/helpers/browser.py), which a started process's own
    environment would not have."""
    name = "DJANGO_ALLOW_ASYNC_UNSAFE"
    return {name: os.environ[name]} if name in os.environ else {}


@contextmanager
def _harness_checks_silenced(read: Settings):
    """Django's deploy check of DJANGO_ALLOW_ASYNC_UNSAFE (async.E001) silenced where this harness, not
    the environment under test, set that variable (`_harness_env`)."""
    if not _harness_env():
        yield
        return
    with override_settings(SILENCED_SYSTEM_CHECKS=[*read.SILENCED_SYSTEM_CHECKS, "async.E001"]):
        yield


@contextmanager
def _started(env_overrides: dict):
    """The settings of a process with this environment in force, and os.environ that environment (some
    of Django's checks read it), within the block; what the process refuses as it starts raised first:
    the values the settings could not use (partner.core's ready)."""
    from partner.core.apps import environment_malformed_refuse

    read = settings_read(env_overrides)
    environ = django_env(env_overrides) | _harness_env()
    # The checks import config/urls.py (the URL checks) with these settings: not this process's map.
    with _urls_kept(), settings_in_force(read), mock.patch.dict(os.environ, environ, clear=True):
        environment_malformed_refuse()
        yield read


def start(env_overrides: dict) -> Settings:
    """What a server refuses at start with this environment, raised as it is raised there
    (ImproperlyConfigured: the values the settings could not use, then the preflight at start); the
    settings when it would start."""
    from partner.core.checks import preflight_at_start

    with _started(env_overrides) as read:
        preflight_at_start()
    return read


def check_deploy(env_overrides: dict) -> tuple[int, str]:
    """`manage.py check --deploy` with exactly this environment, in this process: its exit code and
    its output (stdout and stderr, as the command prints them). A value the settings could not use
    stops manage.py as it starts: code 1 and its message."""
    out, err = StringIO(), StringIO()
    try:
        with _started(env_overrides) as read, _harness_checks_silenced(read):
            call_command("check", deploy=True, stdout=out, stderr=err)
    except SystemCheckError as exc:  # its text opens with its name, as manage.py prints it
        return 1, f"{out.getvalue()}{err.getvalue()}{exc}"
    except ImproperlyConfigured as exc:
        return 1, f"{out.getvalue()}{err.getvalue()}ImproperlyConfigured: {exc}"
    return 0, out.getvalue() + err.getvalue()


@contextmanager
def _urls_kept(*, afresh: bool = False):
    """This process's URL map as it was, after a block that may import config/urls.py under other
    settings (`afresh`: the block starts without it, so it imports it anew): the module put back, or
    dropped if it had not been imported yet, Django's resolver caches cleared, and the admin site's
    texts (which config/urls.py sets) restored."""
    from django.contrib import admin
    from django.urls import clear_url_caches

    site = {name: getattr(admin.site, name) for name in ("site_url", "site_header", "site_title", "index_title")}
    package = sys.modules["config"]
    ours = sys.modules.pop(URLCONF, None) if afresh else sys.modules.get(URLCONF)
    try:
        yield
    finally:
        # This process's own map, or none yet (the next request or resolve imports it afresh).
        if ours is None:
            sys.modules.pop(URLCONF, None)
            if hasattr(package, "urls"):
                del package.urls
        else:
            sys.modules[URLCONF] = ours
            package.urls = ours
        clear_url_caches()
        for name, value in site.items():
            setattr(admin.site, name, value)


def urls_read(read: Settings):
    """config/urls.py imported afresh with `read` in force: the URL map a process with these settings
    serves (for `resolve(path, urlconf=...)`). This process's map and admin site are put back."""
    with _urls_kept(afresh=True), settings_in_force(read):
        return importlib.import_module(URLCONF)
