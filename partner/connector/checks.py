"""The preflight's checks of the stored connections (`manage.py check --deploy`, and the servers'
start: tagged `start`, `partner.core.checks.preflight_at_start`), registered by `ConnectorConfig.ready`.

- connector.E001: with DJANGO_DEBUG off, a connection holds the demo's public secrets (`connection_demo`:
  its OAuth client secret, or its signing secret): anyone can get a token and read and answer its
  orders, or sign events its system accepts. A database seeded by the demo and carried into
  production is refused, naming the connection, never the value.
- connector.E002: a connection's endpoint the current rule refuses (`services.endpoint_problem`: an
  http address, or one the rule refuses since): the sender refuses it before each send as well,
  so its events would only pile up and be given up.

A database not migrated yet, or not reachable, has no connection to check.
"""

from django.conf import settings
from django.core.checks import Error
from django.db import DatabaseError


def _stored_connections():
    from partner.connector.models import Connection

    try:
        return list(Connection.objects.select_related("application").order_by("name"))
    except DatabaseError:
        return []


def demo_connection_check(app_configs=None, **kwargs):
    """connector.E001: a connection with the demo's public secrets, DJANGO_DEBUG off."""
    if settings.DEBUG:
        return []
    from partner.connector.services import demo_secrets_held

    errors = []
    for connection in _stored_connections():
        if held := demo_secrets_held(connection):
            errors.append(
                Error(
                    f"Connection {connection.name} holds the demo's public {' and '.join(held)} "
                    "(`connection_demo`): anyone can use them.",
                    hint="Delete the demo connection in the connector's admin, or give it secrets of its own "
                    "(a new client secret; add a signing secret, then drop the demo's).",
                    id="connector.E001",
                )
            )
    return errors


def connection_endpoints_check(app_configs=None, **kwargs):
    """connector.E002: a connection whose endpoint the current rule refuses."""
    from partner.connector.services import endpoint_problem

    errors = []
    for connection in _stored_connections():
        if problem := endpoint_problem(connection.endpoint_url):
            errors.append(
                Error(
                    f"Connection {connection.name}'s endpoint is refused: {problem}",
                    hint="Set its endpoint to the partner system's https address in the connector's admin "
                    "(or leave it empty: the system pulls its events).",
                    id="connector.E002",
                )
            )
    return errors
