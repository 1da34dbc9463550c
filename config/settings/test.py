"""Settings of the test suite: local settings, each run with its own database, queue, cache and folders.

The suite's services are the ones the process environment names (`make test` exports PostgreSQL and
Redis when they answer on 127.0.0.1: bin/test-services), never a local run's `.env` ones; otherwise
SQLite, the SQLite broker and a file cache, each a file of the run's own under var/test-runs/<id>/.
The run's id is TEST_RUN_ID when the process environment has it (the workers a test starts inherit
the suite's, tests/conftest.py), else this process's id, and under pytest-xdist the worker's name
after it (PYTEST_XDIST_WORKER, gw0, gw1...): runs side by side on one machine, and the workers of
one run, never share a database, queue, cache keys or folder. Nothing is made here:
tests/conftest.py makes the run's folder.
"""

import os

from partner.core import brokers

from .base import VAR_DIR, database, process_env
from .local import *  # noqa: F403

# GENERAL
# ------------------------------------------------------------------------------
RUN_ID = process_env.str("TEST_RUN_ID", default=str(os.getpid()))
_XDIST_WORKER = process_env.str("PYTEST_XDIST_WORKER", default="")
if _XDIST_WORKER and not RUN_ID.endswith(f"_{_XDIST_WORKER}"):
    # The processes a worker's tests start inherit its environment, with the id already derived.
    RUN_ID = f"{RUN_ID}_{_XDIST_WORKER}"
RUN_DIR = VAR_DIR / "test-runs" / RUN_ID
# https://docs.djangoproject.com/en/5.2/ref/settings/#password-hashers
# The connector's client-secret hash as well (CLIENT_SECRET_HASHER): it is its own, never a password's.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher", "partner.connector.oauth.ClientSecretHasher"]

# DATABASES
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/ref/settings/#test
DATABASES = {"default": database(process_env.str("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'test.sqlite3'}"))}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory: the live server, in-process workers and worker
    # processes started by tests all see the same test database.
    DATABASES["default"]["TEST"] = {"NAME": str(RUN_DIR / "db.sqlite3")}
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_partner_{RUN_ID}"}

# CACHES
# ------------------------------------------------------------------------------
if "CACHE_URL" not in process_env:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(RUN_DIR / "cache"),
        }
    }
elif CACHES["default"]["BACKEND"] == "partner.core.cache.RedisCache":  # noqa: F405
    # One Redis database shared by the runs and the workers of a run: each its own keys, and a
    # clear() that deletes only those (Redis's FLUSHDB would empty the others' too).
    CACHES["default"] = {  # noqa: F405
        **CACHES["default"],  # noqa: F405
        "BACKEND": "partner.core.cache.PrefixedRedisCache",
        "KEY_PREFIX": f"partner-test-{RUN_ID}",
    }

# STORAGES
# ------------------------------------------------------------------------------
# Documents of this run in a folder of its own (the workers a test starts use the same settings).
STORAGES = {
    **STORAGES,  # noqa: F405
    "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(RUN_DIR / "media")},
    },
}

# partner.core
# ------------------------------------------------------------------------------
# Each run counts its metrics apart, in its own folder.
PROMETHEUS_MULTIPROC_DIR = process_env.str("PROMETHEUS_MULTIPROC_DIR", default=str(RUN_DIR / "metrics"))

# partner.connector
# ------------------------------------------------------------------------------
# Every test asks for its tokens from 127.0.0.1: the token endpoint's limit per address would count
# the whole suite's (tests/connector/test_rate_limits.py sets the limits it checks).
RATELIMIT_API_TOKEN = "100000/m"

# partner.sandbox
# ------------------------------------------------------------------------------
# The suite tests it: installed whatever SANDBOX_ENABLED says (local.py installed it already unless told not to).
if not SANDBOX_ENABLED:  # noqa: F405
    SANDBOX_ENABLED = True
    INSTALLED_APPS = [*INSTALLED_APPS, "partner.sandbox"]  # noqa: F405

# CELERY
# ------------------------------------------------------------------------------
# The run's own queue, and on the SQLite broker its own file: a test run never consumes a local
# run's messages, nor another run's.
CELERY_TASK_DEFAULT_QUEUE = f"partner-test-{RUN_ID}"
if "CELERY_BROKER_URL" not in process_env:
    CELERY_BROKER_URL = brokers.sqlite_broker_url(RUN_DIR / "broker.sqlite3")
    CELERY_BROKER_TRANSPORT_OPTIONS = brokers.sqlite_broker_options(RUN_DIR / "broker.sqlite3")
    CELERY_DATABASE_ENGINE_OPTIONS = {"connect_args": {"timeout": brokers.SQLITE_BUSY_TIMEOUT}}
    if "CELERY_RESULT_BACKEND" not in process_env:
        CELERY_RESULT_BACKEND = f"db+sqlite:///{RUN_DIR / 'celery-results.sqlite3'}"

# The connector's retries in seconds, not hours: the fault tests watch a failing endpoint recover.
CONNECTOR_RETRY_BACKOFF = process_env.float("CONNECTOR_RETRY_BACKOFF", default=0.5)
CONNECTOR_RETRY_BACKOFF_MAX = process_env.float("CONNECTOR_RETRY_BACKOFF_MAX", default=2.0)
CONNECTOR_RETRY_PATIENCE = process_env.float("CONNECTOR_RETRY_PATIENCE", default=30.0)
CONNECTOR_SEND_TIMEOUT = process_env.float("CONNECTOR_SEND_TIMEOUT", default=2.0)
CONNECTOR_RELAY_INTERVAL = process_env.float("CONNECTOR_RELAY_INTERVAL", default=0.2)
# A worker process a test starts runs 4 threads, not production's 64: the suite's tasks are a few at
# a time, and its workers share two cores with the rest of the run. The tests about the pool set theirs.
CELERY_WORKER_CONCURRENCY = process_env.int("CELERY_WORKER_CONCURRENCY", default=4)
