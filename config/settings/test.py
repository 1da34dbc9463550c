"""Settings of the test suite: base settings with local defaults and fast hashing.

`make test` exports DATABASE_URL, CELERY_BROKER_URL and CACHE_URL for
PostgreSQL and Redis when they answer on 127.0.0.1; otherwise SQLite, the
filesystem broker and a file cache are used.
"""

import os

os.environ.setdefault("DJANGO_DEBUG", "true")  # development keys; Django still runs tests with DEBUG off
os.environ.setdefault("SANDBOX_ENABLED", "true")
os.environ.setdefault(
    "DATABASE_URL", "sqlite:///" + os.path.join(os.path.dirname(__file__), "..", "..", "var", "test.sqlite3")
)

from .base import *  # noqa: E402,F403
from .base import CELERY_BROKER_URL, VAR_DIR  # noqa: E402

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory: the live server, in-process workers and worker
    # processes started by tests all see the same test database.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test-db.sqlite3")}  # noqa: F405

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

if CELERY_BROKER_URL.startswith("filesystem://"):
    # Separate folders so a test run never consumes a local run's messages.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(VAR_DIR / "test-broker" / "queue"),
        "data_folder_out": str(VAR_DIR / "test-broker" / "queue"),
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = f"file://{VAR_DIR / 'test-celery-results'}"
    for _folder in ("test-broker/queue", "test-celery-results"):
        (VAR_DIR / _folder).mkdir(parents=True, exist_ok=True)
if "CACHE_URL" not in os.environ:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "test-cache"),
        }
    }
