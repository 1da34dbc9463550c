"""An in-process world for the benchmarks that count rather than time: Django set up in this
process, the application (and its sandbox) served by threads of this process.

Such a benchmark runs as a child process of `bench/run.py` (its Django set-up is its own): the
reconciliation's calls (bench/reconcile_cost.py) and an order's statements (bench/statements.py).
"""

import os
import threading


def django_setup(*, database_url: str, base_url: str, **extra: str) -> None:
    """Configure this process: local defaults (demo secrets), the sandbox mounted, nothing shared."""
    import django

    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "DJANGO_READ_DOT_ENV_FILE": "false",
            "DJANGO_DEBUG": "true",
            "SANDBOX_ENABLED": "true",
            "DATABASE_URL": database_url,
            "DATABASE_CONN_MAX_AGE": "0",  # the server's request threads do not keep connections
            "CELERY_BROKER_URL": "memory://",
            "CELERY_RESULT_BACKEND": "cache+memory://",
            "CACHE_URL": "locmemcache://",
            "PUBLIC_BASE_URL": base_url,
            "SVC_BASE_URL": f"{base_url}/sandbox",
            "SVC_TOKEN_URL": f"{base_url}/sandbox/oauth2/v1/token",
            "LOG_LEVEL": "ERROR",
            **extra,
        }
    )
    django.setup()


def server_start(port: int):
    """The application (and its sandbox) on 127.0.0.1:`port`, served by threads of this process."""
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class QuietHandler(WSGIRequestHandler):
        disable_nagle_algorithm = True  # headers and body go out apart: no 40 ms delayed-ACK wait per answer

        def log_message(self, *args):
            pass

    server = ThreadedWSGIServer(("127.0.0.1", port), QuietHandler, allow_reuse_address=False)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
