"""Small real HTTP servers a test scripts, for what the sandbox is not meant to do on demand.

`FakeServer` answers each (method, path) with a scripted sequence of `Reply`s and records what
arrived (`Seen`): a redirect, a chosen status sequence, exactly which headers came. `Receiver`
records every webhook POST the sandbox sends, with its exact bytes and when it came, and answers
queued statuses.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

TOKEN_PATH = "/oauth/token"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict
    body: bytes


@dataclass
class Reply:
    status: int = 200
    body: object = None  # dict/list -> JSON, bytes -> raw
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (to make concurrent callers overlap)


class FakeServer:
    """Answers each (method, path) with a scripted sequence of replies (the last one repeats)."""

    def __init__(self):
        self.seen: list[Seen] = []
        self.routes: dict[tuple[str, str], list[Reply]] = {}
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def route(self, method: str, path: str, *replies: Reply):
        self.routes[(method, path)] = list(replies)

    def requests_to(self, method: str, path: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path.split("?")[0] == path]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _read_body(self):
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().strip(), 16)
                        if size == 0:
                            self.rfile.readline()
                            break
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    return b"".join(chunks)
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _answer(self):
                body = self._read_body()
                with server.lock:
                    server.seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))
                    replies = server.routes.get((self.command, self.path.split("?")[0]))
                    reply = (replies.pop(0) if len(replies) > 1 else replies[0]) if replies else Reply(404, {})
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.body
                if isinstance(payload, bytes):
                    raw = payload
                elif payload is None:
                    raw = b""
                else:
                    raw = json.dumps(payload).encode()
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

        return Handler


class Receiver:
    """An HTTP server recording every POST; answers the queued statuses, then `default`."""

    def __init__(self):
        self.calls = []
        self.statuses = []
        self.default = 202
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.calls.append(
                        SimpleNamespace(path=self.path, headers=dict(self.headers), body=body, at=time.monotonic())
                    )
                    status = receiver.statuses.pop(0) if receiver.statuses else receiver.default
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/v1/webhooks"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
