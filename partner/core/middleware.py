"""Request middleware: a request id on every log line, and the forwarded scheme only from trusted proxies."""

import ipaddress
import re
import uuid

from partner.core.logging import request_id_var

_VALID_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestIdMiddleware:
    """Take a sane `X-Request-ID` from the caller or make one; echo it on the response."""

    header = "X-Request-ID"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get(self.header, "")
        request_id = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = request_id_var.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[self.header] = request_id
        return response


class TrustedProxyMiddleware:
    """Believe `X-Forwarded-Proto` only from the proxies TRUSTED_PROXIES names.

    Django's SECURE_PROXY_SSL_HEADER trusts the header from anyone, so a client talking plain
    HTTP straight to us could claim HTTPS and skip the redirect. This runs first and removes the
    header unless the request came from a trusted proxy's address.
    """

    header = "HTTP_X_FORWARDED_PROTO"

    def __init__(self, get_response):
        from django.conf import settings

        self.get_response = get_response
        self.networks = [ipaddress.ip_network(value, strict=False) for value in settings.TRUSTED_PROXIES]

    def _trusted(self, address: str) -> bool:
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def __call__(self, request):
        if self.header in request.META and not self._trusted(request.META.get("REMOTE_ADDR", "")):
            del request.META[self.header]
        return self.get_response(request)
