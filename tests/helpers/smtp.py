"""A small SMTP server on 127.0.0.1, in a thread: what a mail server does for the staff's notices.

It speaks enough SMTP (RFC 5321) for Django's SMTP backend: a greeting, EHLO/HELO, MAIL, RCPT, DATA,
RSET, NOOP, QUIT. It may turn away the first `refuse` connections with 421 (service not available),
as a mail server that is away or overloaded does, and records every message it accepted.
"""

import socketserver
import threading
from email import message_from_bytes, policy


class SmtpServer:
    def __init__(self, *, refuse: int = 0):
        self.refuse = refuse
        self.connections = 0
        self.messages = []
        self._lock = threading.Lock()
        owner = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                with owner._lock:
                    owner.connections += 1
                    turned_away = owner.connections <= owner.refuse
                if turned_away:
                    self.wfile.write(b"421 4.3.2 Service not available, try again later\r\n")
                    return
                self.wfile.write(b"220 test SMTP ready\r\n")
                while True:
                    line = self.rfile.readline()
                    if not line:
                        return
                    verb = line[:4].upper()
                    if verb in (b"EHLO", b"HELO"):
                        self.wfile.write(b"250 test\r\n")
                    elif verb in (b"MAIL", b"RCPT", b"RSET", b"NOOP"):
                        self.wfile.write(b"250 OK\r\n")
                    elif verb == b"DATA":
                        self.wfile.write(b"354 End data with <CR><LF>.<CR><LF>\r\n")
                        data = bytearray()
                        while True:
                            chunk = self.rfile.readline()
                            if not chunk or chunk == b".\r\n":
                                break
                            data += chunk[1:] if chunk.startswith(b"..") else chunk
                        with owner._lock:
                            owner.messages.append(message_from_bytes(bytes(data), policy=policy.default))
                        self.wfile.write(b"250 OK queued\r\n")
                    elif verb == b"QUIT":
                        self.wfile.write(b"221 Bye\r\n")
                        return
                    else:
                        self.wfile.write(b"502 Command not implemented\r\n")

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def mail_server_use(settings, server: SmtpServer) -> None:
    """Point Django's SMTP backend at `server` (`settings`: pytest-django's fixture, undone after the test)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 5
