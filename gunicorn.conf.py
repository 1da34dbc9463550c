"""gunicorn's settings, read from the working directory by `gunicorn config.wsgi`.

Command-line options override these; the worker count comes from `--workers`
or gunicorn's own `WEB_CONCURRENCY`, the address from `--bind` or `PORT`.
"""

import os

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
