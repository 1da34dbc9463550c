"""What the calls to the service cost: counted per endpoint of the spec, status and latency.

Fed by the transport's own signals (`partner.platform.signals`, connected in
PlatformConfig.ready()), so every exchange is counted once, retries included. The endpoint is named
from the path (`transaction`, `response`, …), never the path itself: ids would make a series per
transaction.
"""

from prometheus_client import Counter, Histogram

from partner.platform.signals import service_call_finished, token_requested

SERVICE_CALLS = Counter(
    "partner_service_calls",
    "HTTP exchanges with the service, by endpoint and status ('none': no answer came).",
    ["endpoint", "status"],
)
SERVICE_CALL_SECONDS = Histogram(
    "partner_service_call_duration_seconds",
    "Time of one HTTP exchange with the service, by endpoint.",
    ["endpoint"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TOKEN_REQUESTS = Counter(
    "partner_token_requests",
    "Requests for an access token (renewals), by status ('none': no answer came).",
    ["status"],
)

# The spec's paths, one word per endpoint: (method, path shape with {id}) -> name.
_ENDPOINTS = {
    ("GET", "partner/v2/origins/{id}"): "origin",
    ("GET", "partner/v2/transactions/{id}"): "transaction",
    ("PATCH", "partner/v2/transactions/{id}/response"): "response",
    ("POST", "partner/v2/transactions/{id}/response/resources"): "resources",
    ("GET", "partner/v2/transactions/{id}/events/{id}"): "event",
    ("GET", "partner/v2/transactions"): "transactions",
    ("GET", "partner/v2/products"): "products",
    ("PUT", "partner/v2/products/{id}"): "product",
    ("PATCH", "partner/v2/products/{id}"): "product",
}
_WORDS = {"partner", "v2", "origins", "transactions", "response", "resources", "events", "products"}


def endpoint_name(method: str, url: str) -> str:
    """The spec's endpoint of a call: `transaction`, …, `upload` (a PUT to a slot's location), `other`."""
    from django.conf import settings

    base = settings.SVC_BASE_URL.rstrip("/") + "/"
    method = method.upper()
    if url.startswith(base):
        path = url[len(base) :].split("?", 1)[0].strip("/")
        shape = "/".join(part if part in _WORDS else "{id}" for part in path.split("/"))
        if (method, shape) in _ENDPOINTS:
            return _ENDPOINTS[method, shape]
    # An upload location may be anywhere, on the service's host too (the sandbox's are).
    return "upload" if method == "PUT" else "other"


def _call_count(sender, *, method, url, status, duration, **kwargs) -> None:
    endpoint = endpoint_name(method, url)
    SERVICE_CALLS.labels(endpoint, str(status) if status is not None else "none").inc()
    SERVICE_CALL_SECONDS.labels(endpoint).observe(duration)


def _token_count(sender, *, status, **kwargs) -> None:
    TOKEN_REQUESTS.labels(str(status) if status is not None else "none").inc()


def receivers_connect() -> None:
    """Count every exchange with the service and every token request (PlatformConfig.ready)."""
    service_call_finished.connect(_call_count, dispatch_uid="partner.platform.metrics.calls")
    token_requested.connect(_token_count, dispatch_uid="partner.platform.metrics.tokens")
