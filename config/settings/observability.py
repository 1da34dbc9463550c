"""What the application tells its operators: metrics, logs and error reports."""

from .environment import VAR_DIR, env, setting_refused
from .platform import SVC_PAT_HEADER, SVC_SIGNATURE_HEADER

# METRICS
# ------------------------------------------------------------------------------
# partner/core/metrics.py; https://prometheus.github.io/client_python/multiprocess/
# Prometheus figures at /metrics. Every process of a host counts into one folder (the client
# library's multiprocess mode), emptied when the host's processes start; each process makes it and
# names it to the library when it starts (partner/core/apps.py).
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics"))
# Closed to the public (local runs open it): a bearer token or the networks named open it.
METRICS_PUBLIC = False
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOWED_NETWORKS = env.list("METRICS_ALLOWED_NETWORKS", default=[])
# A worker host without a web process serves its processes' figures on this port (0: not served).
WORKER_METRICS_PORT = env.int("WORKER_METRICS_PORT", default=0)

# LOGGING
# ------------------------------------------------------------------------------
# https://docs.djangoproject.com/en/5.2/topics/logging/
# One line per event with the request id and the ids of the work at hand (notification, order,
# transaction: partner.core.logging.log_context); the redaction filter keeps secrets (client secret,
# signing secrets, passwords, tokens) out of every line. LOG_FORMAT=json writes one JSON object per
# line instead of text, for a log collector (gunicorn.conf.py follows it for gunicorn's own lines).
LOG_LEVEL = env.str("LOG_LEVEL", default="INFO")
LOG_FORMAT = env.str("LOG_FORMAT", default="text").strip().lower() or "text"
if LOG_FORMAT not in ("text", "json"):
    LOG_FORMAT = setting_refused("LOG_FORMAT", "must be text (the default) or json", "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "partner.core.logging.RequestIdFilter"},
        "redact": {"()": "partner.core.logging.RedactSecretsFilter"},
    },
    "formatters": {
        "line": {
            "()": "partner.core.logging.OneLineFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s%(log_context_text)s] %(message)s",
            "defaults": {"request_id": "-", "log_context_text": ""},  # a handler without RequestIdFilter
        },
        "json": {"()": "partner.core.logging.JsonLineFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if LOG_FORMAT == "json" else "line",
            "filters": ["request_id", "redact"],
        },
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # runserver's request lines hold query strings (the origin page's partner access
        # token): through our handler and its filter, not Django's default one.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.db.backends": {"level": "WARNING"},
        "urllib3": {"level": "WARNING"},
    },
}
DEFAULT_EXCEPTION_REPORTER_FILTER = "partner.core.logging.SecretsExceptionReporterFilter"

# ERROR REPORTING
# ------------------------------------------------------------------------------
# https://docs.sentry.io/platforms/python/integrations/django/
# Sentry, only when SENTRY_DSN is set: errors of requests and tasks and lines logged at ERROR, with
# secrets, credential headers and request bodies scrubbed (partner/core/error_reporting.py). Started
# here, as Sentry's Django integration asks, so that it sees the whole start-up; nothing without a DSN.
SENTRY_DSN = env.str("SENTRY_DSN", default="")
if SENTRY_DSN:
    from partner.core.error_reporting import error_reporting_init  # noqa: E402 - only with a DSN

    _SENTRY_TRACES_SAMPLE_RATE = env.float("SENTRY_TRACES_SAMPLE_RATE", default=None)
    if _SENTRY_TRACES_SAMPLE_RATE is not None and not 0 <= _SENTRY_TRACES_SAMPLE_RATE <= 1:
        _SENTRY_TRACES_SAMPLE_RATE = setting_refused("SENTRY_TRACES_SAMPLE_RATE", "must be between 0 and 1", None)
    error_reporting_init(
        dsn=SENTRY_DSN,
        environment=env.str("SENTRY_ENVIRONMENT", default="") or None,
        traces_sample_rate=_SENTRY_TRACES_SAMPLE_RATE,
        secret_headers=[SVC_PAT_HEADER, SVC_SIGNATURE_HEADER],
    )
