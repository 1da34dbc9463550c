"""Request middleware: a request id on every log line, the forwarded scheme only from trusted proxies,
and a body too large refused from its Content-Length before a byte of it is read."""

import ipaddress
import re
import uuid

from django.http import HttpResponse

from partner.core.logging import request_id_var

_VALID_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# How many addresses TrustedProxyMiddleware keeps the verdict of.
_VERDICTS_KEPT = 4096


class RequestIdMiddleware:
    """Take a sane `X-Request-ID` from the caller or make one; echo it on the response."""

    header = "X-Request-ID"
    meta_key = "HTTP_X_REQUEST_ID"  # read from META: building `request.headers` costs more than the rest

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.META.get(self.meta_key, "")
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
    """Believe `X-Forwarded-Proto` and `X-Forwarded-For` only from the proxies TRUSTED_PROXIES names.

    Django's SECURE_PROXY_SSL_HEADER trusts the header from anyone, so a client talking plain
    HTTP straight to us could claim HTTPS and skip the redirect. This runs first and removes the
    header unless the request came from a trusted proxy's address.

    Behind trusted proxies, REMOTE_ADDR becomes the client's address: the right-most address of
    X-Forwarded-For that is not itself a trusted proxy (each proxy appends the address it saw, so
    the ones on the left are the client's word and may be forged). The rate limits and the
    inbox's record of who sent a webhook read it.
    """

    proto_header = "HTTP_X_FORWARDED_PROTO"
    for_header = "HTTP_X_FORWARDED_FOR"

    def __init__(self, get_response):
        from django.conf import settings

        self.get_response = get_response
        self.networks = [ipaddress.ip_network(value, strict=False) for value in settings.TRUSTED_PROXIES]
        # Each address's verdict, kept: parsing an address costs more than the rest of this middleware,
        # and the addresses that reach us are few (the proxies, or the same clients again and again).
        self._verdicts: dict[str, bool] = {}

    def _trusted(self, address: str) -> bool:
        verdict = self._verdicts.get(address)
        if verdict is None:
            verdict = self._trusted_now(address)
            if len(self._verdicts) >= _VERDICTS_KEPT:  # many clients, or forged hops: start again
                self._verdicts.clear()
            self._verdicts[address] = verdict
        return verdict

    def _trusted_now(self, address: str) -> bool:
        if not self.networks:
            return False
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        return any(ip in network for network in self.networks)

    def _client(self, forwarded_for: str) -> str | None:
        """The right-most valid address of X-Forwarded-For that is not a trusted proxy."""
        for hop in reversed([part.strip() for part in forwarded_for.split(",")]):
            try:
                address = str(ipaddress.ip_address(hop))
            except ValueError:
                return None  # a hop we cannot read: stop believing the header there
            if not self._trusted(address):
                return address
        return None

    def __call__(self, request):
        meta = request.META
        if self._trusted(meta.get("REMOTE_ADDR", "")):
            client = self._client(meta.get(self.for_header, ""))
            if client:
                meta["REMOTE_ADDR"] = client
        elif self.proto_header in meta:
            del meta[self.proto_header]
        return self.get_response(request)


class RequestSizeMiddleware:
    """Refuse (413) a request whose Content-Length is past REQUEST_MAX_BYTES, before its body is read.

    Django's own DATA_UPLOAD_MAX_MEMORY_SIZE leaves out the files of a multipart body, which are
    streamed to disk however large they are; the staff upload's size rule (DOCUMENT_MAX_BYTES) runs
    only once the whole body was received. A body without a Content-Length (chunked) is the front
    proxy's to cap (docs/deployment.md): gunicorn has no limit on a body."""

    def __init__(self, get_response):
        from django.conf import settings

        self.get_response = get_response
        self.limit = settings.REQUEST_MAX_BYTES

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django treats it as 0 too
        if length > self.limit:
            return HttpResponse(
                f"The request body is larger than {self.limit} bytes.\n", status=413, content_type="text/plain"
            )
        return self.get_response(request)
