"""The bare webhook handler: the least a `POST /v1/webhooks` must do, the intake benchmark's yardstick.

`application`, a WSGI callable under the intake's gunicorn and load: the body read, its HMAC-SHA256
signature checked, the JSON parsed, one row INSERTed with psycopg into a copy of inbox_notification
(its columns, indexes and unique key). No Django, no broker."""

import base64
import binascii
import hashlib
import hmac
import json
import os

import psycopg
from psycopg.types.json import Jsonb

_SECRET = os.environ.get("SVC_SIGNING_SECRETS", "").split(",")[0].encode()
_DATABASE = os.environ.get("DATABASE_URL", "")
_MAX = 256 * 1024
_conn = None

TABLE = "bare_notification"
INSERT = (
    f"INSERT INTO {TABLE} (dedupe_key, event_id, resource_type, resource_id, event_type, event_time, "  # noqa: S608
    "product_name, resource_ref, body, headers, remote_addr, received_at, created_at, updated_at, state, "
    "attempts, duplicates, last_error) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now(), now(), now(), "
    "'queued', 0, 0, '') ON CONFLICT (dedupe_key) DO NOTHING"
)


def table_create(database: str) -> None:
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        conn.execute(f"CREATE TABLE {TABLE} (LIKE inbox_notification INCLUDING ALL)")


def _connection():
    global _conn
    if _conn is None or _conn.closed:
        _conn = psycopg.connect(_DATABASE, autocommit=True)
    return _conn


def _answer(start_response, status: str, body: bytes = b""):
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


def application(environ, start_response):
    if environ.get("REQUEST_METHOD") != "POST":
        return _answer(start_response, "405 Method Not Allowed")
    length = int(environ.get("CONTENT_LENGTH") or 0)
    if length > _MAX:
        return _answer(start_response, "413 Payload Too Large")
    body = environ["wsgi.input"].read(length)
    try:
        received = base64.b64decode(environ.get("HTTP_SVC_SIGNATURE", ""), validate=True)
    except (binascii.Error, ValueError):
        received = b""
    expected = hmac.new(_SECRET, body, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, received):
        return _answer(start_response, "401 Unauthorized")
    try:
        data = json.loads(body)
        meta = data["meta"]
        row = (
            f"id:{data['eventId']}",
            data["eventId"],
            meta["resourceType"],
            meta["resourceId"],
            data["eventType"],
            data["eventTime"],
            meta.get("instanceId", ""),
            meta.get("resourceRef", ""),
            body.decode(),
            Jsonb({"Content-Type": environ.get("CONTENT_TYPE", "")}),
            environ.get("REMOTE_ADDR"),
        )
    except (ValueError, KeyError, TypeError):
        return _answer(start_response, "400 Bad Request")
    _connection().execute(INSERT, row)
    return _answer(start_response, "202 Accepted")
