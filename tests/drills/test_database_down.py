"""Fault drill in seconds: the database fails while a webhook is received.

The intake must answer 503 with Retry-After (the service redelivers on any
non-2xx), never 202 without the row and never an unhandled 500. The long
version, a real PostgreSQL restart under load, is bench/drills/postgres_restart.py.
"""

import json

import pytest
from django.db import OperationalError, connection

from partner.inbox.models import Notification

pytestmark = pytest.mark.django_db


def body() -> bytes:
    return json.dumps(
        {
            "eventId": "db-down-1",
            "eventTime": "2026-11-22T10:00:00Z",
            "eventType": "created",
            "meta": {
                "resourceType": "urn:svc:platform:transaction",
                "resourceId": "txn-db-down",
                "resourceRef": "http://127.0.0.1:8000/sandbox/partner/v2/transactions/txn-db-down",
            },
        }
    ).encode()


def test_database_error_at_insert_is_503_with_retry_after_and_no_row(signed_post):
    def refuse(execute, sql, params, many, context):
        # At the database, whatever writes the row (the intake's own INSERT, not the ORM's create).
        if sql.startswith("INSERT INTO") and Notification._meta.db_table in sql:
            raise OperationalError("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        response = signed_post(body())

    print(f"\ndatabase drill: answer {response.status_code}, Retry-After {response.headers.get('Retry-After')}")
    assert response.status_code == 503
    assert response.headers["Retry-After"]
    assert Notification.objects.count() == 0

    # The redelivery after the database is back is stored once.
    assert signed_post(body()).status_code == 202
    assert Notification.objects.count() == 1
