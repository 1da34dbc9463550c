"""Settings of the test suite: base settings with local defaults and fast hashing.

`make test` exports DATABASE_URL, CELERY_BROKER_URL and CACHE_URL for
PostgreSQL and Redis when they answer on 127.0.0.1; otherwise SQLite, the
local SQLite broker and a file cache are used, each a file of the run's own.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")  # development keys; Django still runs tests with DEBUG off
os.environ.setdefault("SANDBOX_ENABLED", "true")
os.environ.setdefault(
    "DATABASE_URL", "sqlite:///" + os.path.join(os.path.dirname(__file__), "..", "..", "var", "test.sqlite3")
)

# Each run counts its metrics apart, in its own folder (the workers a test starts inherit it).
os.environ.setdefault(
    "PROMETHEUS_MULTIPROC_DIR",
    os.path.join(
        os.path.dirname(__file__),
        "..",
        "..",
        "var",
        "test-runs",
        os.environ.setdefault("TEST_RUN_ID", str(os.getpid())),
        "metrics",
    ),
)

from partner.core import brokers  # noqa: E402

from .base import *  # noqa: E402,F403
from .base import CELERY_BROKER_TRANSPORT_OPTIONS, CELERY_BROKER_URL, VAR_DIR  # noqa: E402

# One id per test run, inherited by the processes a test starts (workers), so
# that runs side by side on one machine never share a database, queue or cache.
RUN_ID = os.environ.setdefault("TEST_RUN_ID", str(os.getpid()))
RUN_DIR = VAR_DIR / "test-runs" / RUN_ID
RUN_DIR.mkdir(parents=True, exist_ok=True)
CELERY_TASK_DEFAULT_QUEUE = f"partner-test-{RUN_ID}"

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory: the live server, in-process workers and worker
    # processes started by tests all see the same test database.
    DATABASES["default"]["TEST"] = {"NAME": str(RUN_DIR / "db.sqlite3")}  # noqa: F405
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_partner_{RUN_ID}"}  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if "CELERY_BROKER_URL" not in os.environ:
    # The local SQLite broker (config/settings/base.py), in a file of this run's own: a test run never
    # consumes a local run's messages, nor another run's.
    CELERY_BROKER_URL = brokers.sqlite_broker_url(RUN_DIR / "broker.sqlite3")
    CELERY_BROKER_TRANSPORT_OPTIONS = brokers.sqlite_broker_options(RUN_DIR / "broker.sqlite3")
    if "CELERY_RESULT_BACKEND" not in os.environ:
        CELERY_RESULT_BACKEND = f"db+sqlite:///{RUN_DIR / 'celery-results.sqlite3'}"
if brokers.sqlite_broker_path(CELERY_BROKER_URL) is not None:
    # This run's queue too exists before its processes race to create it.
    brokers.sqlite_broker_prepare(CELERY_BROKER_URL, CELERY_BROKER_TRANSPORT_OPTIONS, queue=CELERY_TASK_DEFAULT_QUEUE)
if "CACHE_URL" not in os.environ:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(RUN_DIR / "cache"),
        }
    }

# Documents of this run in a folder of its own (the workers a test starts use the same settings).
STORAGES["default"] = {  # noqa: F405
    "BACKEND": "django.core.files.storage.FileSystemStorage",
    "OPTIONS": {"location": str(RUN_DIR / "media")},
}
