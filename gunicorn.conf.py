"""gunicorn's settings, read from the working directory by `gunicorn config.wsgi`.

Command-line options override these; the worker count comes from `--workers`
or gunicorn's own `WEB_CONCURRENCY`, the address from `--bind` or `PORT`.
"""

import ipaddress
import os
from pathlib import Path

import environ

# A webhook is answered in milliseconds and a service call times out in SVC_TIMEOUT:
# a request still running after this is stuck, and its worker is replaced.
timeout = 30
graceful_timeout = 30
# Behind a load balancer that keeps connections open to us.
keepalive = 30
# The access log names the path and never the query string: our page calls the origin proxy with
# the partner access token in it (`?partnerAccessToken=`), and a log is no place for a token.
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'

# LOG_FORMAT=json (read from the process environment: this file is read before Django and its .env):
# gunicorn's error and access lines come out as JSON objects too, through the application's formatter
# and secret filter; where they go (--access-logfile, --error-logfile) stays gunicorn's to say.
if os.environ.get("LOG_FORMAT", "").strip().lower() == "json":
    logger_class = "partner.core.gunicorn_logging.JsonLogger"


class _Environment(environ.Env):
    """The process environment with the repository's `.env` filling in, read as the settings read
    it (config/settings/environment.py), without writing to os.environ."""

    ENVIRON = dict(os.environ)


if environ.Env().bool("DJANGO_READ_DOT_ENV_FILE", default=True):
    _dot_env = os.environ.get("DJANGO_ENV_FILE", str(Path(__file__).resolve().parent / ".env"))
    _Environment.read_env(_dot_env, overwrite=False)

# One rule for which proxies are believed: TRUSTED_PROXIES, for gunicorn as for the application
# (partner/core/middleware.py). gunicorn's default believes X-Forwarded-Proto from loopback (its
# FORWARDED_ALLOW_IPS), and decides the scheme before the application sees the request: a client on
# this machine could claim https. Nobody when TRUSTED_PROXIES is empty.
forwarded_allow_ips = ",".join(
    str(ipaddress.ip_network(value, strict=False)) for value in _Environment().list("TRUSTED_PROXIES", default=[])
)
# The PROXY protocol is not used: nobody may send its header.
proxy_allow_ips = ""

# Request limits gunicorn can enforce: the request line, the number and the size of header fields
# (its defaults, said here so that they are ours). gunicorn has no limit on a body: the application
# refuses one whose Content-Length is past REQUEST_MAX_BYTES before reading it, and the front proxy
# must cap every body, chunked ones included (docs/deployment.md).
limit_request_line = 4094
limit_request_fields = 100
limit_request_field_size = 8190
