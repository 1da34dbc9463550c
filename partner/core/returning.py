"""UPDATE … RETURNING through the ORM: rows changed and read back as the UPDATE left them, in one statement.

`QuerySet.update` answers with a count, so a caller that needs the changed row reads it again: two
statements where PostgreSQL and SQLite (3.35 and later) need one. The UPDATE is the ORM's own (its
filters, expressions and converters), with `RETURNING` and the model's columns added.
"""

from django.db import connections, models
from django.db.models import sql


def update_returning(queryset: models.QuerySet, **updates) -> list[models.Model]:
    """Apply `updates` to the rows of `queryset`; those rows as the UPDATE left them (none matched: [])."""
    query = queryset.query.chain(sql.UpdateQuery)
    query.add_update_values(updates)
    compiler = query.get_compiler(queryset.db)
    statement, params = compiler.as_sql()
    if not statement:
        return []
    model = queryset.model
    fields = model._meta.concrete_fields
    quote = connections[queryset.db].ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    with compiler.connection.cursor() as cursor:
        cursor.execute(f"{statement} RETURNING {columns}", params)
        rows = cursor.fetchall()
    # The columns are the model's concrete fields in order: each row is a model as the database has
    # it, through its fields' converters (JSON, times), without a raw query's mapping of columns to
    # fields by name (issue 38: that mapping was a third of the call's CPU).
    converters = compiler.get_converters([field.get_col(model._meta.db_table) for field in fields])
    if converters:
        rows = compiler.apply_converters(rows, converters)
    names = [field.attname for field in fields]
    return [model.from_db(queryset.db, names, list(row)) for row in rows]
