"""UPDATE … RETURNING: the rows as the UPDATE left them, in one statement."""

import pytest
from django.db import connection
from django.db.models import F
from django.db.models.query import RawQuerySet
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from partner.core.returning import update_returning
from partner.fulfillment.models import Order


@pytest.mark.django_db
def test_the_rows_come_back_as_the_update_left_them_in_one_statement_without_a_raw_query(monkeypatch):
    """Each row read back through its fields' converters (JSON, times) as a query of the model reads it,
    with no raw query mapping the columns to the fields by name (issue 38: a third of the call's CPU)."""
    order = Order.objects.create(transaction_id="t-returning", response={"status": "PROCESSING"}, attempts=2)
    Order.objects.create(transaction_id="t-untouched")
    monkeypatch.setattr(RawQuerySet, "__iter__", lambda self: pytest.fail("a raw query"))
    now = timezone.now()

    with CaptureQueriesContext(connection) as queries:
        rows = update_returning(
            Order.objects.filter(transaction_id="t-returning"),
            attempts=F("attempts") + 1,
            findings={"checked": [1, 2]},
            prepared_at=now,
        )
    assert len(queries) == 1
    assert [row.pk for row in rows] == [order.pk]
    (row,) = rows
    assert (row.attempts, row.findings, row.response, row.prepared_at) == (3, {"checked": [1, 2]}, order.response, now)
    assert not row._state.adding and row._state.db == "default"
    fields = [field.attname for field in Order._meta.concrete_fields]
    read = Order.objects.get(pk=order.pk)
    assert [getattr(row, name) for name in fields] == [getattr(read, name) for name in fields]
    assert update_returning(Order.objects.filter(transaction_id="nothing"), attempts=9) == []
