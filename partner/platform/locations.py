"""Where a borrower's document may be uploaded: the rule for an upload slot's `location` (#4, #5).

The service's slot answer names the URL that the worker PUTs a borrower's PDF to. A spoofed or
broken answer must not make us send that document, with its one-time Authorization value, to a
host inside our own network or to a cloud metadata endpoint. `upload_location_check` is the one
place that decides; `client.upload_resource` calls it before any connection is opened.

- Strict (`SVC_UPLOAD_LOCATION_STRICT`: on everywhere but in local runs with DEBUG, and no
  variable turns it off; config/settings/): https only, and every address the
  host resolves to (socket.getaddrinfo, as the connection would resolve it; a literal address is
  taken as it is) must be public: not loopback, private, link-local, unspecified, reserved,
  multicast, shared (100.64.0.0/10) or a cloud metadata address. An IPv4-mapped IPv6 address
  (::ffff:a.b.c.d) is judged as the IPv4 address it carries, a 6to4 one as itself and as the
  IPv4 address it carries.
- Not strict (local runs, the embedded sandbox on http://127.0.0.1): http or https, any address.
- Both: no user info in the URL, and when `SVC_UPLOAD_HOSTS` is set, the host must be named
  there. An entry is an exact host (`uploads.example.com`) or, with a leading dot, a domain and
  all its subdomains (`.example.com` matches `example.com` and `a.b.example.com`), as Django's
  ALLOWED_HOSTS; empty allows any host (that strict mode finds public). The port is not limited.

A refused location raises UploadLocationRefusedError (permanent: the same answer is refused
every time); a host that cannot be resolved at all raises ServiceUnavailableError (transient,
as the connection error the PUT would have met).

DNS rebinding: the host is resolved here, and again by the connection that sends the PUT a
moment later; a name server that answers a public address first and a private one next would get
past this check alone. In strict mode the upload's connection is held to the same rule
(`client.upload_resource` gives `address_refusal` to `partner.core.outbound`): every address of
that second lookup is checked, the connection is made to the address checked, and the connected
peer is checked again; a refusal is an UploadLocationRefusedError too.
"""

import socket
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from urllib.parse import urlsplit

from django.conf import settings

from partner.platform.errors import RequestRefused, ServiceUnavailableError

# Cloud metadata and host-agent endpoints. Most are link-local or private anyway; some are not
# (Azure's WireServer, Oracle's legacy metadata), and naming them all makes the refusal say what it is.
METADATA_ADDRESSES = frozenset(
    ip_address(address)
    for address in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS over IPv6
        "100.100.100.200",  # Alibaba Cloud
        "168.63.129.16",  # Azure WireServer (a public address)
        "192.0.0.192",  # Oracle Cloud legacy metadata
    )
)
# Not public, though Python 3.11's `is_global` may say otherwise for parts of them.
NOT_PUBLIC_NETWORKS = tuple(ip_network(network) for network in ("100.64.0.0/10", "192.0.0.0/24"))


class UploadLocationRefusedError(RequestRefused):
    """An upload location we do not send a document to; refused before any connection is opened.

    Not transient: the slot's location is refused every time. The message names the reason and
    the location without its query (where a signature may be), never the Authorization value.
    """


def _refused(location, reason: str) -> UploadLocationRefusedError:
    url = location if isinstance(location, str) else None
    return UploadLocationRefusedError(f"upload location refused: {reason}", method="PUT", url=url)


def address_refusal(address: IPv4Address | IPv6Address) -> str | None:
    """Why an upload may not go to `address` (e.g. "a private address"), or None when it is public."""
    if isinstance(address, IPv6Address):
        if address.ipv4_mapped is not None:
            return address_refusal(address.ipv4_mapped)
        if address.sixtofour is not None and (carried := address_refusal(address.sixtofour)):
            return f"{carried} (in a 6to4 address)"
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for flag, reason in (
        ("is_loopback", "a loopback address"),
        ("is_unspecified", "an unspecified address"),
        ("is_link_local", "a link-local address"),
        ("is_multicast", "a multicast address"),
        ("is_reserved", "a reserved address"),
        ("is_private", "a private address"),
        ("is_site_local", "a private address"),  # IPv6 fec0::/10 (deprecated site-local)
    ):
        if getattr(address, flag, False):
            return reason
    if not address.is_global or any(address in network for network in NOT_PUBLIC_NETWORKS):
        return "not a public address"
    return None


def host_allowed(host: str, allowed) -> bool:
    """Is `host` named by an entry of `allowed` (exact, or `.domain` for the domain and its subdomains)?"""
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.strip().lower().rstrip(".")
        if not entry:
            continue
        if entry.startswith("."):
            if host == entry[1:] or host.endswith(entry):
                return True
        elif host == entry:
            return True
    return False


def _addresses(host: str, port: int, location: str) -> list[IPv4Address | IPv6Address]:
    """The addresses a connection to `host` may use: the literal address, or every one DNS gives."""
    try:
        return [ip_address(host)]
    except ValueError:
        pass
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as err:  # not encodable as a host name (IDNA)
        raise _refused(location, "the host is not a valid name") from err
    except OSError as err:  # socket.gaierror: no such name, or no answer now
        raise ServiceUnavailableError(
            f"upload location: host could not be resolved ({type(err).__name__})", method="PUT", url=location
        ) from err
    addresses = []
    for _family, _type, _proto, _canonname, sockaddr in answers:
        try:
            addresses.append(ip_address(sockaddr[0]))
        except ValueError as err:
            raise _refused(location, f"{host} resolves to something that is not an IP address") from err
    if not addresses:
        raise _refused(location, f"{host} resolves to no address")
    return addresses


def upload_location_check(location) -> None:
    """Raise UploadLocationRefusedError unless a document may be PUT to `location` (see the module)."""
    strict = settings.SVC_UPLOAD_LOCATION_STRICT
    if not isinstance(location, str):
        raise _refused(location, "not a URL")
    try:
        parts = urlsplit(location)
        port = parts.port
    except ValueError as err:
        raise _refused(location, "not a URL") from err
    scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
    if scheme not in ("http", "https") or not host:
        raise _refused(location, "not an http(s) URL")
    if strict and scheme != "https":
        raise _refused(location, "not https")
    if parts.username is not None or parts.password is not None:
        raise _refused(location, "carries user info")
    allowed = settings.SVC_UPLOAD_HOSTS
    if allowed and not host_allowed(host, allowed):
        raise _refused(location, f"host {host} is not named in SVC_UPLOAD_HOSTS")
    if not strict:
        return
    for address in _addresses(host, port or 443, location):
        reason = address_refusal(address)
        if reason:
            said = f"{host} is {reason}" if host == str(address) else f"{host} resolves to {address}, {reason}"
            raise _refused(location, said)
