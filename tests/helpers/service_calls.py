"""The exchanges with the service a test recorded (the `service_calls` fixture), and what kind of call each was."""

from urllib.parse import urlsplit


class ServiceCalls(list):
    """Every exchange with the service's API and upload locations, as dicts of the keyword arguments
    of `service_call_finished` (method, url, status, duration, attempt, error); `.tokens` holds the
    exchanges with the token endpoint (`token_requested`) the same way."""

    def __init__(self):
        super().__init__()
        self.tokens = []

    def clear(self):
        super().clear()
        self.tokens.clear()


def path_of(call) -> str:
    return urlsplit(call["url"]).path


def call_kind(call):
    """What a recorded call did: "transaction", "slots", "upload", "patch", "event", "products"."""
    method, path = call["method"], path_of(call)
    if path.endswith("/response/resources"):
        return "slots"
    if path.endswith("/response"):
        return "patch"
    if "/events/" in path:
        return "event"
    if "/uploads/" in path or method == "PUT":
        return "upload"
    if path.endswith("/products"):
        return "products"
    if "/transactions/" in path:
        return "transaction"
    return path
