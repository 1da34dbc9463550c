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
    statement, params = query.get_compiler(queryset.db).as_sql()
    if not statement:
        return []
    model = queryset.model
    quote = connections[queryset.db].ops.quote_name
    columns = ", ".join(quote(field.column) for field in model._meta.concrete_fields)
    # A raw query maps the returned columns to the model's fields with their converters (JSON, times).
    return list(model.objects.db_manager(queryset.db).raw(f"{statement} RETURNING {columns}", params))
