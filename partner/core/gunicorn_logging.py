"""gunicorn's own lines (its error log and its access log) as JSON, for `LOG_FORMAT=json`.

gunicorn writes these through loggers of its own (`gunicorn.error`, `gunicorn.access`) with
handlers it sets up from its options (`--access-logfile`, `--error-logfile`, syslog), apart from
Django's LOGGING. gunicorn.conf.py names `JsonLogger` as gunicorn's `logger_class` when
LOG_FORMAT is json: gunicorn sets up its handlers as usual, then each gets the application's JSON
formatter and its filters, so those lines read like the application's and are masked the same way.
An access line carries the request id the application answered with (`X-Request-ID`), so it is
found with the request's other lines.
"""

from gunicorn.glogging import Logger

from partner.core.logging import JsonLineFormatter, RedactSecretsFilter, RequestIdFilter, request_id_var


class JsonLogger(Logger):
    """gunicorn's logger, writing one JSON object per line through the application's formatter and filters."""

    def setup(self, cfg):
        super().setup(cfg)
        formatter = JsonLineFormatter()
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)
                if not any(isinstance(f, RedactSecretsFilter) for f in handler.filters):
                    handler.addFilter(RequestIdFilter())
                    handler.addFilter(RedactSecretsFilter())

    def access(self, resp, req, environ, request_time):
        request_id = next((value for name, value in resp.headers if name.lower() == "x-request-id"), None)
        token = request_id_var.set(request_id or "-")
        try:
            super().access(resp, req, environ, request_time)
        finally:
            request_id_var.reset(token)
