"""The environment reader: every setting is read through it, from the process environment and a `.env` file.

django-environ's reader, from the process environment and from a `.env` file at the repository root
for what the process environment does not set (`make setup` copies `.env.example`, which documents
each variable). Reading writes nothing: no file, no folder, no `os.environ`. A value that cannot be
used is noted (ENVIRONMENT_MALFORMED, named never echoed) and reading goes on with the default, so
that one start names every such variable at once; the readers of our own kinds of value (a rate,
a word of the service's URNs) note theirs the same way.
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = BASE_DIR / "var"  # run-time files of local runs: broker, cache, media, metrics, beat schedule


# The variables whose value cannot be used, each with why (never the value). Reading goes on with
# the setting's default, so that one start names every such variable at once: partner.core refuses
# to start any process while one is here (partner/core/apps.py), after every settings module read its own.
ENVIRONMENT_MALFORMED: dict[str, str] = {}


def setting_refused(name: str, why: str, fallback):
    """Note that `name`'s value cannot be used (`why` completes "NAME ...", and never holds the
    value) and go on reading the settings with `fallback`."""
    ENVIRONMENT_MALFORMED.setdefault(name, why)
    return fallback


class _Reading(environ.Env):
    """django-environ's reader, whose typed reads (int, float, bool, list, json...) note a malformed
    value (`setting_refused`) instead of stopping at the first with a text that may echo it."""

    def get_value(self, var, cast=None, default=environ.Env.NOTSET, parse_default=False):
        try:
            return super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except ImproperlyConfigured:
            raise  # a required variable missing
        except Exception as exc:  # environ raises ValueError/KeyError/etc. with cryptic texts
            why = f"is malformed ({type(exc).__name__}); see .env.example"
            if default is self.NOTSET:
                raise ImproperlyConfigured(f"Environment variable {var} {why}") from None
            return setting_refused(var, why, default)


class _Environment(_Reading):
    """The reader over a copy of the process environment, which the `.env` file fills in (`read_env`
    adds to its class's mapping): the process's own variables win, os.environ stays as it was."""

    ENVIRON = dict(os.environ)


# The process environment with the .env file: what every setting is read from.
env = _Environment()
# The process environment alone: what a production switch obeys (the .env file is a local run's).
process_env = _Reading()

# DJANGO_ENV_FILE names another file than the repository's .env (tests, several local set-ups);
# DJANGO_READ_DOT_ENV_FILE=false reads none (the benchmarks, deployments that want only real variables).
if process_env.bool("DJANGO_READ_DOT_ENV_FILE", default=True):
    _Environment.read_env(process_env.str("DJANGO_ENV_FILE", default=str(BASE_DIR / ".env")), overwrite=False)


def env_read(name: str, parse, fallback):
    """A variable read by a parser of its own (`parse(name)`: a database, cache or e-mail URL),
    noting a malformed value as the typed reads do (`_Reading`); `fallback` stands in for it meanwhile."""
    try:
        return parse(name)
    except Exception as exc:  # environ's ImproperlyConfigured of an unknown scheme too
        return setting_refused(
            name, f"is not a URL this application reads ({type(exc).__name__}); see .env.example", fallback
        )


# Rate limits (partner/core/ratelimits.py; https://django-ratelimit.readthedocs.io/en/stable/rates.html):
# a rate is "count/period", the period s, m, h or d with an optional multiplier ("10/m", "100/5m").
def rate(name: str, default: str) -> str:
    value = env.str(name, default=default).strip()
    count, _, period = value.partition("/")
    multiplier, unit = period[:-1] or "1", period[-1:]
    well_formed = count.isdecimal() and multiplier.isdecimal() and unit in ("s", "m", "h", "d")
    if not well_formed or int(count) == 0 or int(multiplier) == 0:
        return setting_refused(name, "must be a rate like 60/m (a count per s, m, h or d, e.g. 100/5m)", default)
    return value


def urn_part(name: str, default: str, problem) -> str:
    """A part of the service's URNs (partner/platform/urns.py), refused at start when `problem` finds one."""
    value = env.str(name, default=default)
    reason = problem(value)
    if reason:
        return setting_refused(name, f"{reason}; see docs/deployment.md", default)
    return value
