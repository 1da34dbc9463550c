"""The indexes the history bench recommends, as the models' `Meta.indexes` would declare them.

`python -m bench.history_indexes --database URL` creates those missing in one database, with the DDL
Django's schema editor writes for them (what a migration would run), so that `bench/history.py
--candidate-indexes` can measure the application with them before anyone adds them to the models.
Once they are in the models (and migrated), nothing is left for it to create.

Each one is partial where it can be: its size follows the rows a periodic job is looking for (the
backlog, the open orders, the data not yet purged), not the history.
"""

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def candidates() -> list[tuple]:
    """(model, models.Index, what it is for)."""
    from django.db import models
    from django.db.models import Q

    from partner.fulfillment.models import FINAL_STATUSES, Order, OrderDocument, OrderStep
    from partner.inbox.models import Notification, NotificationState

    unfinished = Q(state__in=[NotificationState.RECEIVED, NotificationState.QUEUED, NotificationState.PROCESSING])
    personal = ~Q(body="") | ~Q(headers={}) | Q(remote_addr__isnull=False)
    held = ~Q(file="") | ~Q(upload_location="") | ~Q(upload_authorization="")
    return [
        (
            Notification,
            models.Index(fields=["id"], condition=unfinished, name="inbox_unfinished"),
            "the relay's round and the sweep (ORDER BY id LIMIT: never a walk of the primary key)",
        ),
        (
            Notification,
            models.Index(fields=["received_at"], condition=unfinished, name="inbox_unfinished_age"),
            "the backlog's oldest row: /metrics, /healthz/ready, the dashboard",
        ),
        (
            Notification,
            models.Index(fields=["id"], condition=personal, name="inbox_personal_data"),
            "the purge of notification bodies (rows still holding a body, headers or address)",
        ),
        (
            Order,
            models.Index(fields=["status", "product_name"], condition=~Q(status__in=FINAL_STATUSES), name="order_open"),
            "open orders: /metrics (orders_collect), the purge's 'never an open order'",
        ),
        (
            Order,
            models.Index(fields=["status", "completed_at"], name="order_status_completed"),
            "orders finished before a cut-off (retention)",
        ),
        (
            Order,
            models.Index(fields=["status", "failed_at"], name="order_status_failed"),
            "orders finished before a cut-off (retention)",
        ),
        (
            OrderDocument,
            models.Index(fields=["id", "order"], condition=held, name="attachment_document_held"),
            "the purge of documents (attachments still holding a file or an upload location)",
        ),
        (
            OrderStep,
            models.Index(fields=["id", "order"], condition=~Q(detail=""), name="step_detail_held"),
            "the purge of order data (steps still holding a detail)",
        ),
    ]


def indexes_create() -> list[str]:
    """Create the candidates missing from the database Django is connected to; their DDL."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")
        present = {name for (name,) in cursor.fetchall()}
    created = []
    with connection.schema_editor() as editor:
        for model, index, _ in candidates():
            if index.name not in present:
                statement = str(index.create_sql(model, editor))
                editor.execute(statement)
                created.append(statement)
    return created


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True)
    args = parser.parse_args(argv)
    from bench.history_probe import _setup

    _setup(args.database)
    print(json.dumps(indexes_create()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
