"""The Celery application: `celery -A config worker` (add `-B` for the periodic jobs; `--sender` for
a worker that sends the connector's events only).

Its settings are the Django settings that DJANGO_SETTINGS_MODULE names; without it, the production
ones (config/settings/production.py), which refuse to start without what a deployment must give: a
worker or scheduler that forgot the variable never runs quietly with local settings. `make run`
names config.settings.local in the Procfile, the test suite config.settings.test.
"""

import os

import click
from celery import Celery, bootsteps
from celery.signals import beat_init, task_postrun, task_prerun, worker_init, worker_process_init, worker_ready
from kombu.transport import TRANSPORT_ALIASES

from partner.core.brokers import sqlite_broker_prepare

# Before the app is made: Celery's Django fix-up is installed only when the variable is set.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

# `sqla+...` URLs (the local SQLite broker) use kombu's SQLAlchemy transport waiting in short steps,
# so that a worker asked to stop sees it at once (partner/core/sqlite_transport.py).
TRANSPORT_ALIASES["sqla"] = TRANSPORT_ALIASES["sqlalchemy"] = "partner.core.sqlite_transport:Transport"

app = Celery("partner")
# Every CELERY_* setting of config/settings/ configures the app.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# Two kinds of task have a queue of their own beside the default one (the inbox's notifications, a
# burst of new orders among them, and the periodic chores), so that what a person or a partner's
# system waits for never queues behind such a burst (docs/performance.md, "waits"): the connector's
# event sends (`<default>.events`) and the order runs (`<default>.runs`: an answer, a staff delivery,
# a retry; a new order runs in its webhook's task). Every worker consumes all three: `celery -A config
# worker` with no `-Q` consumes every queue of `task_queues`, so no deployment's command names them,
# and the broker hands a free thread the next message of each queue in turn. A sender (`--sender`,
# below) consumes the events' queue alone. The tasks' names are
# `partner.connector.sending.SEND_TASK` and `partner.fulfillment.enqueue.ORDER_RUN_TASK` (not
# imported here: Django is not set up yet).
EVENTS_TASK = "connector.event_send"
RUNS_TASK = "fulfillment.order_run"
ROUTED = {"events": EVENTS_TASK, "runs": RUNS_TASK}


def queue_of(default_queue: str, kind: str) -> str:
    """The queue of a kind of `ROUTED`, named after the default one (a test run's own, `config.settings.test`)."""
    return f"{default_queue}.{kind}"


@app.on_after_configure.connect
def _queues(sender, source, **kwargs):
    """The default queue and the routed ones, declared as Celery declares its default one, and their
    tasks routed to them. Then, on the SQLite broker of local runs and tests, its file, kombu's tables
    and every queue exist before this process uses them: made under a lock while missing, so that the
    web, worker and beat processes starting together do not race to make them
    (partner/core/brokers.py). Once per process, when its app first reads its configuration."""
    from kombu import Exchange, Queue

    default = source.task_default_queue
    routed = {task: queue_of(default, kind) for kind, task in ROUTED.items()}
    names = [default, *routed.values()]
    source.task_queues = [Queue(name, Exchange(name), routing_key=name) for name in names]
    source.task_routes = {task: {"queue": queue, "routing_key": queue} for task, queue in routed.items()}
    for queue in names:
        sqlite_broker_prepare(source.broker_url or "", source.broker_transport_options, queue=queue)


@worker_init.connect
@beat_init.connect
def _preflight(**kwargs):
    """A worker or scheduler refuses to start on an unsafe or missing setting (PREFLIGHT_AT_START,
    partner/core/checks.py), as the web server does. Celery logs and swallows an exception of a signal
    handler, so the refusal is printed and the process exits."""
    import sys

    from django.core.exceptions import ImproperlyConfigured

    from partner.core.checks import preflight_at_start

    try:
        preflight_at_start()
    except ImproperlyConfigured as exc:
        print(f"ImproperlyConfigured: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


@task_prerun.connect
def _task_log_id(task_id=None, **kwargs):
    """Log lines written inside a task carry the task id where a request carries its id."""
    from partner.core.logging import request_id_var

    request_id_var.set(task_id or "-")


@task_postrun.connect
def _task_log_id_clear(**kwargs):
    from partner.core.logging import request_id_var

    request_id_var.set("-")


@task_prerun.connect
def _task_one_retry_layer(**kwargs):
    """A task's calls to the service are one attempt each: the task retries, later, instead of a
    worker process sleeping in the transport (partner/platform/http.py)."""
    from partner.platform.http import transport_retries_set

    transport_retries_set(False)


@task_postrun.connect
def _task_one_retry_layer_end(**kwargs):
    from partner.platform.http import transport_retries_set

    transport_retries_set(True)


@task_prerun.connect
@task_postrun.connect
def _task_connections_tidied(**kwargs):
    """What Django does around a request: close connections that are too old or broken.

    Celery's own fix-up would close them all around every task (see CELERY_DB_REUSE_MAX).
    """
    from django.db import close_old_connections

    close_old_connections()


# The sender: `celery -A config worker --sender` (the image's `sender` process kind) consumes the
# events' queue only, beside the workers that consume every queue, the events' too (so a deployment
# without a sender still sends its events). A burst of arrivals holds every thread of a worker in its
# platform calls (300-500 ms each) and an event's task waits for one to free (acks_late, a prefetch
# of 1); a sender's threads no arrival can hold (docs/performance.md, "A sender process of its own").
app.user_options["worker"].add(
    click.Option(
        ["--sender", "sender_only"],
        is_flag=True,
        default=False,
        help="Consume only the connector's events' queue (<default queue>.events), with "
        "CONNECTOR_SENDS_IN_FLIGHT threads unless --concurrency is given.",
    )
)


class Sender(bootsteps.Step):
    """Worker boot step of `--sender`: the events' queue the only one consumed, and the threads.

    Its `__init__` runs while the worker applies its boot steps: after the worker's own queue setup
    (`-Q`/`-X`, `WorkController.setup_queues`), which it replaces, and after the pool step took its
    concurrency (it requires it), but before any step is started: the consumer reads the queues to
    consume, and the pool its size, when they start. The threads are CONNECTOR_SENDS_IN_FLIGHT (8 by
    default): the relay hands out at most that many sends at once across the deployment, so a sender
    runs every one of them at once and a thread more would never have an event; 8 is the size measured
    (docs/performance.md). `--concurrency` on the command line wins; CELERY_WORKER_CONCURRENCY, the
    workers' size, does not apply."""

    label = "sender"
    requires = ("celery.worker.components:Pool",)

    def __init__(self, parent, sender_only=False, **kwargs):
        super().__init__(parent, **kwargs)
        if not sender_only:
            return
        from django.conf import settings

        parent.app.amqp.queues.select([queue_of(parent.app.conf.task_default_queue, "events")])
        context = click.get_current_context(silent=True)
        if context is None or context.get_parameter_source("concurrency") != click.ParameterSource.COMMANDLINE:
            parent.concurrency = max(1, settings.CONNECTOR_SENDS_IN_FLIGHT)
            if not parent.autoscale:
                parent.min_concurrency = parent.concurrency


app.steps["worker"].add(Sender)


# The housekeeping loop runs in every worker: the lease hand-backs and the inbox's relay
# (partner/core/housekeeping.py). Named, not imported: the step is loaded when the worker starts,
# after Django has set up the models its chores use.
app.steps["worker"].add("partner.core.housekeeping:Housekeeping")


@worker_ready.connect
@worker_process_init.connect
def worker_gc_freeze(**kwargs):
    """Once a worker is up, what it loaded is kept out of the collector's full passes
    (partner/core/heap.py): without it each full collection walked its whole heap, about 190,000
    objects, 110-160 ms of the worker's one GIL every 30-50 staff deliveries (2-4 ms of CPU per
    delivery, 6-16 ms per connected order; docs/performance.md, "The worker, second round"). A prefork
    child freezes after its fork (`worker_process_init`), the main process and a thread pool's at
    `worker_ready`. Its young collections are made rarer too (WORKER_YOUNG_THRESHOLD: about half their
    CPU per delivery, "The worker, third round")."""
    from partner.core.heap import WORKER_YOUNG_THRESHOLD, loaded_freeze

    loaded_freeze(young_threshold=WORKER_YOUNG_THRESHOLD)


@worker_ready.connect
def _worker_metrics(**kwargs):
    """A worker host without a web process serves its processes' figures (WORKER_METRICS_PORT)."""
    from django.conf import settings

    from partner.core.metrics import worker_metrics_serve

    if settings.WORKER_METRICS_PORT:
        worker_metrics_serve(settings.WORKER_METRICS_PORT)
