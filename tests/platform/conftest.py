"""Fixtures of the platform tests: a small real HTTP server for transport behaviour.

The sandbox on the live server is the service of the integration tests; this
server is for what the sandbox is not meant to do on demand (redirect, answer
a chosen status sequence, record exactly which headers arrived).
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


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


TOKEN_PATH = "/oauth/token"


@pytest.fixture
def fake():
    server = FakeServer()
    yield server
    server.close()


@pytest.fixture
def fake_service(fake, settings):
    """Settings pointing the client at the fake server, a token route, fast backoff, an empty cache."""
    from django.core.cache import cache

    from partner.platform.http import sessions_close

    settings.SVC_BASE_URL = f"{fake.url}/svc"
    settings.SVC_TOKEN_URL = f"{fake.url}{TOKEN_PATH}"
    settings.SVC_RETRY_BACKOFF = 0.001
    settings.SVC_RETRY_BACKOFF_MAX = 0.01
    settings.SVC_MAX_RETRIES = 3
    settings.SVC_TIMEOUT = (2.0, 5.0)
    fake.route(
        "POST",
        TOKEN_PATH,
        Reply(200, {"access_token": "fake-access-token-1", "token_type": "Bearer", "expires_in": 3600}),
    )
    cache.clear()
    sessions_close()
    yield fake
    cache.clear()
    sessions_close()


TOKEN_SCRIPT = """
import json, sys, threading
import django
django.setup()
from partner.platform import tokens
from partner.platform.signals import token_requested
requested = []
token_requested.connect(lambda sender, **kw: requested.append(kw["status"]), weak=False)
print("ready", flush=True)
sys.stdin.readline()
got = []
threads = [threading.Thread(target=lambda: got.append(tokens.token_get())) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"requests": len(requested), "tokens": sorted(set(got))}), flush=True)
"""


def token_race_with_another_process(service_calls, *, threads: int = 4) -> dict:
    """Ask for a token in this process and, at the same moment, in a second Python process.

    The second process runs with the same settings module, run id (so the same
    file cache, or the same Redis from CACHE_URL) and service URLs. Returns the
    token requests each process made (ours as `service_calls`, the test's recorder,
    saw them) and the tokens each one got. Kept in one
    piece (over 60 lines): the other process, the simultaneous requests and the
    cleanup that always ends that process belong together.
    """
    import json as json_module
    import os
    import subprocess
    import sys

    from django.conf import settings

    from partner.platform import tokens

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "TEST_RUN_ID": str(getattr(settings, "RUN_ID", "")),
        "SVC_BASE_URL": settings.SVC_BASE_URL,
        "SVC_TOKEN_URL": settings.SVC_TOKEN_URL,
        "SVC_CLIENT_ID": settings.SVC_CLIENT_ID,
        "SVC_CLIENT_SECRET": settings.SVC_CLIENT_SECRET,
        "SVC_SCOPE": settings.SVC_SCOPE,
    }
    if not env["TEST_RUN_ID"]:
        env.pop("TEST_RUN_ID")
    other = subprocess.Popen(
        [sys.executable, "-c", TOKEN_SCRIPT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        cwd=str(settings.BASE_DIR),
    )
    try:
        assert other.stdout.readline().strip() == "ready"
        before, got = len(service_calls.tokens), []
        other.stdin.write("go\n")
        other.stdin.flush()
        workers = [threading.Thread(target=lambda: got.append(tokens.token_get())) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        requested = len(service_calls.tokens) - before
        out, _ = other.communicate(timeout=60)
    finally:
        if other.poll() is None:
            other.kill()
    theirs = json_module.loads(out.strip().splitlines()[-1])
    return {"ours": {"requests": requested, "tokens": sorted(set(got))}, "theirs": theirs}


@pytest.fixture
def sandbox(service, settings, fake):
    """The seeded sandbox on the live server, its webhooks sent to the local `fake` server (answers 202)."""
    from types import SimpleNamespace

    from partner.platform.http import sessions_close
    from partner.sandbox import faults
    from partner.sandbox.products import product_webhooks_point
    from partner.sandbox.seeding import sandbox_seed
    from partner.sandbox.webhooks import webhook_deliveries_wait

    settings.SVC_RETRY_BACKOFF = 0.01
    settings.SVC_RETRY_BACKOFF_MAX = 0.05
    settings.SANDBOX_WEBHOOK_BACKOFF = 0.01
    fake.route("POST", "/v1/webhooks", Reply(202, b""))
    sessions_close()
    faults.rules_forget()
    seed = sandbox_seed(public_base_url=service.url)
    for product in seed.products.values():
        product_webhooks_point(product=product, url=f"{fake.url}/v1/webhooks")
    yield SimpleNamespace(seed=seed, url=service.url, base=service.base_url, receiver=fake)
    assert webhook_deliveries_wait(20)
    faults.faults_clear()
    sessions_close()
