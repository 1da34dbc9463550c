"""Rate limits: what a client may ask of us per window before it is answered 429 with Retry-After.

Counting is django-ratelimit's (`get_usage`): fixed windows in the default cache, so the limits hold
across every web process only when that cache is shared (Redis in production, partner.E005). Limited
requests do nothing else: the view is not called, so no call goes to the service and no login is tried.

- `address_rate_limited(group=..., rate=...)`: every request counts against the client's address
  (`rate()` says the rate when the request comes, so a change of its setting holds at once);
  beyond the rate, 429 with the UI's error shape `{"errors": [{status, code, message}]}`.
- `request_counted(request, group=..., rate=..., key=...)`: the count itself, for a caller that
  answers in its own way (the connector API's throttles: per OAuth client, and its token endpoint's
  per address).

With the cache unreachable (its Redis down) nothing can be counted. A limit that guards secrets
(the token endpoint's, the admin's sign-in) refuses then: the cache's error goes up, and the API
answers it 503 with Retry-After (partner/core/api.py). A limit that guards capacity only
(`fail_open=True`: the connector API's per-client count, and its count of requests without a
token, which are refused anyway) lets the request through, so the API's reads, which need no
cache, keep working; a warning says so, once per outage and process.
- `admin_login_limited(view)`: the admin's sign-in. Every POST counts against the address (counted
  before the attempt, so parallel requests cannot slip past); failed attempts count against the
  username tried, so that a botnet cannot share the guessing at one account while the account's owner
  is never locked out by signing in. Past either limit even the right password is refused with 429
  until the window frees. The username check comes before the attempt and the count after it, so
  parallel failures may pass it by at most the server's concurrency.

The client's address is REMOTE_ADDR as partner.core.middleware.TrustedProxyMiddleware leaves it; an
IPv6 client counts by its /64, the share one host is usually given.
"""

import functools
import ipaddress
import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django_ratelimit.core import get_usage

from partner.core.cache import CACHE_UNREACHABLE

logger = logging.getLogger(__name__)

# An IPv6 client may change addresses inside the /64 it was given: count the network.
IPV6_PREFIX = 64


def client_address(group, request) -> str:
    """The rate-limit key of the client's address (django-ratelimit calls keys with the group too)."""
    address = request.META.get("REMOTE_ADDR", "")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address  # not an address (a Unix socket's peer): all such requests share one count
    if ip.version == 6:
        return str(ipaddress.ip_network(f"{ip}/{IPV6_PREFIX}", strict=False).network_address)
    return str(ip)


def login_username(request) -> str:
    """The username a sign-in tried, as the limit counts it: case and surrounding spaces do not matter."""
    return request.POST.get("username", "").strip().casefold()


def retry_after(usage: dict) -> int:
    """Whole seconds until the window of `usage` frees.

    django-ratelimit's window ends at a whole second (`time_left` after the current one) and its next
    window begins one second later; a failed cache read gives -1, answered as 1.
    """
    return max(1, usage["time_left"] + 1)


def _rate_limited_json(seconds: int) -> JsonResponse:
    message = f"Too many requests from this address. Try again in {seconds} seconds."
    response = JsonResponse({"errors": [{"status": None, "code": "rate_limited", "message": message}]}, status=429)
    response["Retry-After"] = str(seconds)
    return response


# Whether this process's last count found the cache unreachable: the warning once per outage.
_uncounted = False


def request_counted(request, *, group: str, rate: str, key=client_address, fail_open: bool = False) -> int | None:
    """Count `request` in `group` (key: the client's address unless told) against `rate`; the whole
    seconds to wait when it is over the limit, None when it may go on. With the cache unreachable,
    None when `fail_open`, else the cache's error."""
    global _uncounted
    try:
        usage = get_usage(request, group=group, key=key, rate=rate, increment=True)
    except CACHE_UNREACHABLE as exc:
        if not fail_open:
            raise
        if not _uncounted:
            logger.warning("rate limits not counted, the cache is unreachable (%s)", type(exc).__name__)
            _uncounted = True
        return None
    _uncounted = False
    if usage is not None and usage["should_limit"]:
        return retry_after(usage)
    return None


def address_rate_limited(*, group: str, rate: Callable[[], str], unless=None):
    """Decorate a view: at most `rate()` requests ("60/m", e.g. a setting's value) per client address in `group`.

    Views decorated with the same group share one count. `unless(request)` true: the request is
    not counted (it costs nothing the limit protects).
    """

    def decorate(view):
        @functools.wraps(view)
        def limited(request, *args, **kwargs):
            if unless is not None and unless(request):
                return view(request, *args, **kwargs)
            wait = request_counted(request, group=group, rate=rate())
            if wait is not None:
                return _rate_limited_json(wait)
            return view(request, *args, **kwargs)

        return limited

    return decorate


def _login_refused(seconds: int) -> HttpResponse:
    text = f"Too many sign-in attempts. Wait {seconds} seconds, then try again.\n"
    response = HttpResponse(text, status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(seconds)
    return response


def _signed_in(request, response) -> bool:
    # The admin's login view redirects once it has logged the user in; a refused form is shown again (200).
    return response.status_code == 302 and request.user.is_authenticated


def admin_login_limited(view):
    """Decorate the admin's login view with settings.RATELIMIT_ADMIN_LOGIN per address and per username."""

    @functools.wraps(view)
    def limited(request, *args, **kwargs):
        if request.method != "POST":
            return view(request, *args, **kwargs)
        rate = settings.RATELIMIT_ADMIN_LOGIN
        username = login_username(request)

        def by_username(increment: bool):
            return get_usage(
                request,
                group="admin-login:username",
                key=lambda _group, _request: username,
                rate=rate,
                increment=increment,
            )

        waits = []
        by_address = get_usage(request, group="admin-login:address", key=client_address, rate=rate, increment=True)
        if by_address is not None and by_address["should_limit"]:
            waits.append(retry_after(by_address))
        if username:
            # Read, not counted: `count` is the failures so far, so the limit is reached at `limit` of them.
            failures = by_username(increment=False)
            if failures is not None and failures["count"] >= failures["limit"]:
                waits.append(retry_after(failures))
        if waits:
            return _login_refused(max(waits))

        response = view(request, *args, **kwargs)
        if username and not _signed_in(request, response):
            by_username(increment=True)
        return response

    return limited
