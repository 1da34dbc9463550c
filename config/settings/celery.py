"""The background work: Celery (broker, results, workers, periodic jobs), and the leases and sweeps
that hand lost work to the broker again."""

from partner.core import brokers  # no Django import; kombu and SQLAlchemy only when a local broker is used

from .environment import VAR_DIR, env
from .framework import TIME_ZONE
from .fulfillment import RECONCILE_INTERVAL

# LEASES AND SWEEPS
# ------------------------------------------------------------------------------
# partner/core/leases.py
# A worker's hold on a notification or an order lasts this long unless renewed; it renews it every
# third of this while it works, so a dead worker's order is free again within this many seconds,
# and picked up by another worker within a third of it more (partner/core/leases.py).
LEASE_SECONDS = env.float("LEASE_SECONDS", default=15.0)
# A notification or order left this long with no worker holding it had its message lost: the
# sweep hands it to the broker again (partner/core/leases.py).
STALL_SECONDS = env.int("STALL_SECONDS", default=120)
# How often the sweeps run (seconds; CELERY_BEAT_SCHEDULE below).
SWEEP_INTERVAL = env.int("SWEEP_INTERVAL", default=30)

# CELERY
# ------------------------------------------------------------------------------
# https://docs.celeryq.dev/en/stable/userguide/configuration.html
# Every CELERY_* setting configures the Celery app (config/celery.py).
# The default broker is kombu's SQLAlchemy transport on one SQLite file, var/broker.sqlite3: no server,
# so `make run` works anywhere, and a worker never reads half a message (partner/core/brokers.py).
# Production refuses it, and any broker that needs no server, at start (config/settings/production.py):
# it sets CELERY_BROKER_URL=redis://... or amqp://... (`check --deploy` says it too, partner.E003).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=brokers.sqlite_broker_url(VAR_DIR / "broker.sqlite3"))
_local_broker_file = brokers.sqlite_broker_path(CELERY_BROKER_URL)
if _local_broker_file is not None:
    # No visibility timeout on this transport: the messages a worker held when it was killed
    # (SIGKILL; a normal stop gives them back) are not delivered again. The sweeps hand the stalled
    # notifications and orders to the broker again after STALL_SECONDS, as after any lost message.
    # The file, kombu's tables and the default queue are made when a process's Celery app is
    # configured (config/celery.py), before its processes could race to make them.
    CELERY_BROKER_TRANSPORT_OPTIONS = brokers.sqlite_broker_options(_local_broker_file)
    # Results (only `check_worker` waits for one) in a SQLite file of their own, beside it.
    _default_results = f"db+sqlite:///{_local_broker_file.with_name('celery-results.sqlite3')}"
    CELERY_DATABASE_ENGINE_OPTIONS = {"connect_args": {"timeout": brokers.SQLITE_BUSY_TIMEOUT}}
else:
    # Stay under the visibility timeout so an unacknowledged task is not
    # redelivered while it still runs (time limits below are far shorter).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    _default_results = CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "rpc://"
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=_default_results)
CELERY_TIMEZONE = TIME_ZONE
# JSON only: a task carries ids, never pickled objects or secrets.
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_RESULT_EXPIRES = 3600
# Ignore results unless a caller asks: our tasks record their outcome in the database.
CELERY_TASK_IGNORE_RESULT = True
# Acknowledge after the task ran, so a worker that dies mid-task leaves it queued.
CELERY_TASK_ACKS_LATE = True
# A killed child process requeues its task instead of acknowledging it.
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# The worker's model: one process whose tasks run in threads (`celery -A config worker` with no
# --pool runs it; the Procfile and docs/deployment.md name it). A task spends almost all of its
# time waiting on the service (300-500 ms a call), and a waiting thread costs no process: 64
# threads keep one worker host as busy at the platform's real latency as at 1 ms, in about 200 MiB,
# where 2 prefork processes made 0.12 of their 1 ms rate in 445 MiB and 32 threads 0.69-0.78
# (docs/performance.md). Each thread may hold a PostgreSQL connection (docs/deployment.md).
# Thread pools do not enforce CELERY_TASK_*_TIME_LIMIT: every call has its SVC_TIMEOUT instead.
CELERY_WORKER_POOL = env.str("CELERY_WORKER_POOL", default="threads")
CELERY_WORKER_CONCURRENCY = env.int("CELERY_WORKER_CONCURRENCY", default=64)
# One message at a time per thread (64 in flight per worker): a lost worker's are redelivered.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A task stuck on the service is interrupted (soft) and then killed (hard).
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=120)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=150)
# A task published by a request or a task (partner/core/enqueue.py) holds its caller at most this
# long: one attempt with these connect/read/write timeouts; past it the stored row waits for the sweep.
BROKER_PUBLISH_SECONDS = env.float("BROKER_PUBLISH_SECONDS", default=1.0)
# Publishing retries a little when the broker blips, then gives up: the inbox sweeper re-enqueues.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
# Bounded retries with exponential backoff and jitter (used by every task that calls the service;
# partner/core/retries.py). A 429 or 503 with Retry-After is the service asking us to wait: the task
# comes back after that wait and spends no retry, for CELERY_TASK_RATE_LIMIT_PATIENCE seconds
# after the first such wait; past it, those count too. Every other transient error counts.
CELERY_TASK_MAX_RETRIES = env.int("CELERY_TASK_MAX_RETRIES", default=5)
CELERY_TASK_RATE_LIMIT_PATIENCE = env.int("CELERY_TASK_RATE_LIMIT_PATIENCE", default=3600)
CELERY_TASK_RETRY_BACKOFF = 2  # seconds, doubled per attempt
CELERY_TASK_RETRY_BACKOFF_MAX = 300  # never wait longer than this between attempts (a Retry-After too)
CELERY_TASK_RETRY_JITTER = True  # spread retries so that workers do not stampede the service
# Celery's Django fix-up closes every database connection before and after each task unless
# this is set: a new PostgreSQL connection (and backend process) per task. With it, a task's
# connections live like a request's: closed when older than DATABASE_CONN_MAX_AGE or unusable
# (config/celery.py), and by the fix-up after this many tasks.
CELERY_DB_REUSE_MAX = 1000
# Our logging configuration stays in charge of the root logger.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# What a task prints (the console e-mail backend of local runs) is logged as INFO, not as a warning.
CELERY_WORKER_REDIRECT_STDOUTS_LEVEL = "INFO"
CELERY_WORKER_SEND_TASK_EVENTS = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# The periodic jobs (seconds: SWEEP_INTERVAL above, RECONCILE_INTERVAL in config/settings/fulfillment.py).
CELERY_BEAT_SCHEDULE = {
    "inbox-sweep": {"task": "inbox.sweep", "schedule": SWEEP_INTERVAL},
    "orders-sweep": {"task": "fulfillment.sweep", "schedule": SWEEP_INTERVAL},
    # The cheap pass each time; the full pass in the run that finds RECONCILE_FULL_INTERVAL passed.
    "transactions-reconcile": {"task": "fulfillment.reconcile", "schedule": RECONCILE_INTERVAL},
    "products-pull": {"task": "catalog.pull", "schedule": RECONCILE_INTERVAL},
    "data-purge": {"task": "core.purge", "schedule": 24 * 60 * 60},  # once a day (RETENTION_* settings)
    # Staff-worked orders past their due time: staff are told once (partner/fulfillment/staff/notices.py).
    "staff-overdue": {"task": "fulfillment.overdue", "schedule": 300},
}
