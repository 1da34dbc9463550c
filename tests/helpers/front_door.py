"""Requests to `config.wsgi` as a WSGI server (gunicorn, runserver) hands them over: what production runs.

Django's handler closes the database connection at the end of a request when Django would (an open
transaction, an error), so tests calling it run outside a test transaction (`transaction=True`).
"""

import io
import json
from dataclasses import dataclass

from django.utils.datastructures import CaseInsensitiveMapping

from partner.inbox.webhook_wsgi import WEBHOOK_PATH


@dataclass
class Answer:
    """What the server sends back: status, headers (case-insensitive) and body."""

    status_code: int
    headers: CaseInsensitiveMapping
    content: bytes

    def json(self):
        return json.loads(self.content)


def wsgi_call(body: bytes = b"", *, app=None, method="POST", path=WEBHOOK_PATH, chunked=False, **environ) -> Answer:
    """One request through a WSGI application (`config.wsgi.application` unless `app`)."""
    if app is None:
        import config.wsgi

        app = config.wsgi.application
    env = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8080",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1:8080",
        "CONTENT_TYPE": "application/json",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    if chunked:
        env["HTTP_TRANSFER_ENCODING"] = "chunked"
    else:
        env["CONTENT_LENGTH"] = str(len(body))
    env.update(environ)
    started = {}

    def start_response(status, headers, exc_info=None):
        started["status"], started["headers"] = int(status.split()[0]), headers

    result = app(env, start_response)
    try:
        content = b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    return Answer(started["status"], CaseInsensitiveMapping(dict(started["headers"])), content)
