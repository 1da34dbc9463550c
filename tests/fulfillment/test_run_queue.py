"""An order's run has a queue of its own (config/celery.py): an answer from a partner's system or a
staff delivery never waits on the broker behind a burst of new orders' notifications."""

import pytest
from django.db import transaction

from config.celery import EVENTS_TASK, RUNS_TASK, app
from partner.connector.sending import SEND_TASK
from partner.fulfillment.enqueue import ORDER_RUN_TASK, order_run_enqueue
from tests.helpers.queues import queue_taken


def test_the_routed_tasks_are_named_as_their_apps_name_them():
    assert (EVENTS_TASK, RUNS_TASK) == (SEND_TASK, ORDER_RUN_TASK)


@pytest.mark.django_db(transaction=True)
def test_an_order_run_goes_to_the_runs_queue_which_every_worker_consumes():
    default = app.conf.task_default_queue
    runs = f"{default}.runs"
    assert {default, runs} <= set(app.amqp.queues)  # what `celery -A config worker` consumes

    queue_taken(runs), queue_taken(default)  # a previous test's leftovers
    with transaction.atomic():
        order_run_enqueue(41)
    assert queue_taken(runs) == [{"order_id": 41}]
    assert queue_taken(default) == []
