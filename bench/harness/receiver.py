"""A partner's order system receiving our pushes: the waits benchmark's and the schedule drill's."""

import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """An endpoint of a partner's system: each push verified with `standardwebhooks` (`verify_with`
    the connection's secret), recorded in `pushes` (webhook-id, type, order, version, the status
    answered) and, the first time one is taken, in `first` (webhook-id: (event, epoch it came)); each
    new order.created's order id handed to `on_created` in a thread of its own. `mode`: "up", "down"
    (503 to every push) or "hang" (answers after `hang_s`, the sender gone meanwhile: 599). Over
    https with `tls` (certificate, key)."""

    def __init__(self, on_created, *, bind=("127.0.0.1", 0), tls=None, hang_s: float = 0.0):
        self.on_created, self.hang_s, self.webhook = on_created, hang_s, None
        self.mode, self.pushes, self.first, self.lock = "up", [], {}, threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body, came = self.rfile.read(int(self.headers.get("Content-Length") or 0)), time.time()
                self.send_response(receiver.receive(body, self.headers, came))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(bind, Handler)
        self.server.daemon_threads = True
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        host, port = self.server.server_address[:2]
        self.url = f"{'https' if tls else 'http'}://{host}:{port}/events"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def verify_with(self, secret: str) -> None:
        from standardwebhooks.webhooks import Webhook

        self.webhook = Webhook(secret)

    def receive(self, body: bytes, headers, came: float) -> int:
        """One push: the status it is answered with."""
        mode = self.mode
        if mode == "hang":
            time.sleep(self.hang_s)
        try:
            event = self.webhook.verify(body, dict(headers))
        except Exception:
            return 401
        status, webhook_id, order = 503 if mode == "down" else 200, headers["webhook-id"], event["data"]["order"]
        with self.lock:
            first = status == 200 and webhook_id not in self.first
            if first:
                self.first[webhook_id] = (event, came)
            push = {"webhook_id": webhook_id, "type": event["type"], "order": order["id"], "version": order["version"]}
            self.pushes.append(push | {"answered": 599 if mode == "hang" else status})
        if first and event["type"] == "order.created":
            threading.Thread(target=self.on_created, args=(order["id"],), daemon=True).start()
        return status

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
