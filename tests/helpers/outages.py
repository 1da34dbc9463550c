"""Our own services away, for real: what Django raises when PostgreSQL cannot be reached."""

import socket

import psycopg
from django.db import connection as db_connection
from django.db.utils import DatabaseErrorWrapper


def database_away(*args, **kwargs):
    """Raise what Django raises when PostgreSQL cannot be reached (refused: a restart), made for real
    by connecting to a port nobody listens on, wrapped as Django wraps its driver's errors. Takes any
    arguments, to stand in for the service call that meets the outage."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with DatabaseErrorWrapper(db_connection):
        psycopg.connect(host="127.0.0.1", port=closed, user="postgres", connect_timeout=2)
