"""Prometheus metrics: GET /metrics, and the registry of what is measured when it is scraped.

Two kinds of figures, with the `prometheus-client` library:
- Counted where it happens: counters and histograms defined in each layer's `metrics.py`
  (webhooks by outcome, calls to the service, turnarounds, failures). gunicorn's workers and
  Celery's pool processes each count for themselves, so the library's multiprocess mode is on
  (PROMETHEUS_MULTIPROC_DIR, set by the settings): each process writes its figures to a file of
  that directory and a scrape sums them. The directory belongs to one host and is emptied when
  the host's processes start (`make run` does; a container starts with an empty one).
- Measured when scraped: gauges read from the database and the broker at that moment (the inbox
  backlog, open orders, messages waiting). Apps register a collector in their AppConfig.ready
  with `metrics_collector_register`; this module knows no app.

/metrics is closed to the public unless DJANGO_DEBUG is on: a bearer token (METRICS_TOKEN) or an
address in METRICS_ALLOWED_NETWORKS opens it. A worker host without a web process serves its own
processes' counters on WORKER_METRICS_PORT (`worker_metrics_serve`).
"""

import hmac
import ipaddress
import logging
from collections.abc import Iterable

from django.conf import settings
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

logger = logging.getLogger(__name__)


class ScrapeCollector:
    """A collector of figures read at scrape time; a failing one is skipped, never the whole scrape."""

    def __init__(self, name: str, collect):
        self.name = name
        self._collect = collect

    def collect(self) -> Iterable[Metric]:
        try:
            return list(self._collect())
        except Exception as exc:  # the database or the broker away: the other figures still count
            logger.warning("metrics: %s could not be read (%s)", self.name, type(exc).__name__)
            return []


_collectors: dict[str, ScrapeCollector] = {}


def metrics_collector_register(name: str, collect) -> None:
    """`collect()` yields metric families (e.g. GaugeMetricFamily) read at scrape time."""
    _collectors[name] = ScrapeCollector(name, collect)


def gauge(name: str, documentation: str, samples: dict[tuple, float], labels: tuple[str, ...] = ()) -> Metric:
    """A gauge family from {label values: value}."""
    family = GaugeMetricFamily(name, documentation, labels=list(labels))
    for values, value in samples.items():
        family.add_metric(list(values), value)
    return family


def registry_build(*, scraped: bool = True) -> CollectorRegistry:
    """Every process's counters of this host, and (when `scraped`) the figures read now."""
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    if scraped:
        for collector in _collectors.values():
            registry.register(collector)
    return registry


def metrics_text(*, scraped: bool = True) -> bytes:
    return generate_latest(registry_build(scraped=scraped))


def metrics_access(request) -> int | None:
    """None when the request may read the metrics, else the status to answer (401 or 403)."""
    if settings.METRICS_PUBLIC:
        return None
    token = settings.METRICS_TOKEN
    if token:
        expected = f"Bearer {token}".encode()
        if hmac.compare_digest(request.headers.get("Authorization", "").encode(), expected):
            return None
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        address = None
    if address is not None and any(address in network for network in metrics_networks()):
        return None
    return 401 if token else 403


def metrics_networks() -> list:
    return [ipaddress.ip_network(value, strict=False) for value in settings.METRICS_ALLOWED_NETWORKS]


def broker_waiting_collect():
    """Messages waiting in each task queue, the default one, the order runs' and the connector's events'
    (`config/celery.py`), declared as Celery declares them, so RabbitMQ agrees."""
    from celery import current_app

    waiting = {}
    with current_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2.0)
        with conn.channel() as channel:
            for queue in current_app.amqp.queues:
                declared = channel.queue_declare(queue, passive=False, durable=True, auto_delete=False)
                waiting[(queue,)] = declared.message_count
    yield gauge(
        "partner_broker_messages_waiting",
        "Task messages waiting in the broker's queues (not yet taken by a worker).",
        waiting,
        ("queue",),
    )


def worker_metrics_serve(port: int) -> None:
    """Serve this host's processes' counters on `port` (a worker host without a web process)."""
    from prometheus_client import start_http_server

    start_http_server(port, registry=registry_build(scraped=False))
    logger.info("worker metrics on port %d", port)


__all__ = ["CONTENT_TYPE_LATEST", "gauge", "metrics_access", "metrics_collector_register", "metrics_text"]
