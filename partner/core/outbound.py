"""Every HTTP call we make to another system, the service's and the partner's: one module sends them.

Two channels go through here: the platform's (`partner.platform.http`: the service's API, its
token endpoint and the upload locations it names) and the connector's (`partner.connector.sending`:
the events POSTed to a partner system's endpoint). Each gets the same care:

- Sessions without `trust_env` (no proxy variables and, above all, no ~/.netrc, which would replace
  an Authorization header we set: requests' documented behaviour) and without cookies: pooled per
  process and pid-aware (`pooled`: a forked worker builds its own rather than share its parent's
  sockets), or one-off (`one_off`) for a host we send to now and then.
- A timeout on every socket operation (connect, each read), and, when the caller gives one, a
  deadline on the whole exchange: a timer shuts the connection's socket when it passes, whatever
  the exchange is waiting on, so that no answer, however slowly it drips, holds a worker past it
  (a socket's timeout bounds each read, never the sum of them).
- An address rule, when the caller gives one (`address_refusal`: the upload locations' ranges, for
  an upload and for a partner system's endpoint): checked on every address the host resolves
  to, the connection pinned to the address checked (no second lookup a rebinding name server could
  answer otherwise) and the connected peer checked again; a refusal is a try with a plain cause.
- Redirects are never followed: a 3xx is the answer (requests would carry our headers to whatever
  host a redirect names).
- A bounded read (`exchange_kept`), for an answer that matters by its status and its start only:
  at most KEPT bytes of it are read, and the connection is closed rather than drained.
- Metrics: every exchange counted by channel and outcome (its status class, or `none` when no
  answer came), and its duration observed.
- Every try noted (`Try`: when, how long, the status, the answer's start kept, or a plain cause
  when no answer came). A caller that keeps a record of its tries (an order's deliveries, an
  event) gathers those of a block with `tries_noted`.

KEPT is the project's one length for a text it keeps: an answer's start, an error, a reason
(`kept`).
"""

import contextlib
import contextvars
import heapq
import itertools
import os
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from http.cookiejar import DefaultCookiePolicy
from ipaddress import ip_address

import requests
import urllib3
from django.utils import timezone
from prometheus_client import Counter, Histogram
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from partner.core.logging import redact

KEPT = 2000  # characters of a text kept (an answer's start, an error, a reason); bytes of an answer read
POOL_SIZE = 64  # connections kept per host: web threads or worker threads of one process

OUTBOUND_CALLS = Counter(
    "partner_outbound_calls",
    "HTTP exchanges with other systems, by channel (service, connector) and outcome (status class, 'none').",
    ["channel", "outcome"],
)
OUTBOUND_SECONDS = Histogram(
    "partner_outbound_call_duration_seconds",
    "Time of one HTTP exchange with another system, by channel.",
    ["channel"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)


def kept(text) -> str:
    """The start of `text` that is kept (KEPT characters); "" for None."""
    return str(text or "")[:KEPT]


@dataclass(frozen=True)
class Try:
    """One exchange tried: when, how long, the status (None: no answer came) and the answer's start
    kept, or why no answer came, in plain words."""

    channel: str
    method: str
    url: str  # as shown: without user info, query or fragment when the caller said so
    started_at: datetime
    duration_ms: int
    status: int | None
    answer: str

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


_noted: contextvars.ContextVar[list | None] = contextvars.ContextVar("outbound_tries", default=None)


@contextlib.contextmanager
def tries_noted():
    """The tries made within the block, in order (a list filled as they are made)."""
    tries: list[Try] = []
    token = _noted.set(tries)
    try:
        yield tries
    finally:
        _noted.reset(token)


def _note(attempt: Try) -> None:
    OUTBOUND_CALLS.labels(attempt.channel, f"{attempt.status // 100}xx" if attempt.status else "none").inc()
    OUTBOUND_SECONDS.labels(attempt.channel).observe(attempt.duration_ms / 1000)
    tries = _noted.get()
    if tries is not None:
        tries.append(attempt)


# Sessions ----------------------------------------------------------------------------------------


class AddressRefused(OSError):
    """An address the exchange's rule refuses (`exchange_kept`'s `address_refusal`): no connection
    was made to it, or the one made was closed before anything was sent. The message is plain."""


class _Deadline:
    """One exchange's connections, shut when its deadline passes (`_Watchdog`), and the rule of the
    addresses they may connect to (None: any)."""

    current = threading.local()

    def __init__(self, address_refusal=None):
        self.connections, self.lock, self.over = [], threading.Lock(), False
        self.address_refusal = address_refusal

    def watch(self, connection) -> None:
        with self.lock:
            if not any(known is connection for known in self.connections):
                self.connections.append(connection)
            if self.over and connection.sock is not None:
                _shut(connection.sock)

    def shut(self) -> None:
        with self.lock:
            self.over = True
            for connection in self.connections:
                if connection.sock is not None:
                    _shut(connection.sock)


def _shut(sock) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once; the owner closes it


_fence = threading.local()


@contextlib.contextmanager
def fenced(check):
    """Within the block, `check()` runs right before each request's first byte is written, after
    its connection is made, and may raise to send nothing (a worker's lease: `Lease.held`). What it
    raises reaches the caller as it is."""
    previous = getattr(_fence, "check", None)
    _fence.check = check
    try:
        yield
    finally:
        _fence.check = previous


def _fence_check() -> None:
    if check := getattr(_fence, "check", None):
        check()


def _watched(connection) -> None:
    if deadline := getattr(_Deadline.current, "value", None):
        deadline.watch(connection)


def _ip(text: str):
    return ip_address(text.split("%", 1)[0])  # an IPv6 address may carry its zone


def _refused_at(address, reason: str) -> AddressRefused:
    return AddressRefused(f"refused: the host's address is {reason}; nothing was sent")


def address_refused(exc: BaseException | None) -> AddressRefused | None:
    """The address refusal `exc` is, or wraps, if any."""
    if exc is None:
        return None
    return next((cause for cause in _causes(exc) if isinstance(cause, AddressRefused)), None)


def _connected(connection, new_conn):
    """`new_conn()` under the exchange's address rule: the host resolved here and every address it
    has checked, the connection made to the first one checked (pinned: a second lookup, which a
    rebinding name server would answer otherwise, is never made), and the connected peer checked."""
    exchange = getattr(_Deadline.current, "value", None)
    rule = exchange.address_refusal if exchange is not None else None
    if rule is None:
        return new_conn()
    host = connection._dns_host
    try:
        answers = socket.getaddrinfo(host, connection.port, type=socket.SOCK_STREAM)
    except OSError:
        return new_conn()  # not resolvable: urllib3 raises its own error, told as "host name not found"
    addresses = [_ip(sockaddr[0]) for *_, sockaddr in answers]
    for address in addresses:
        if reason := rule(address):
            raise _refused_at(address, reason)
    connection._dns_host = str(addresses[0])
    try:
        sock = new_conn()
    finally:
        connection._dns_host = host
    peer = _ip(sock.getpeername()[0])
    if reason := rule(peer):
        sock.close()
        raise _refused_at(peer, reason)
    return sock


class _Watched:
    """A connection the current exchange's deadline may shut: when it connects, and when a pooled
    one is used again (it does not connect then); it connects only where the exchange's address
    rule allows."""

    def _new_conn(self):
        return _connected(self, super()._new_conn)

    def connect(self):
        super().connect()
        _watched(self)

    def request(self, *args, **kwargs):
        _fence_check()
        _watched(self)
        return super().request(*args, **kwargs)


class _WatchedHTTP(_Watched, HTTPConnection):
    pass


class _WatchedHTTPS(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTP


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPS


class _WatchedAdapter(HTTPAdapter):
    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _Watchdog:
    """The one thread of a process that shuts the connections of the exchanges whose deadline passed,
    named "outbound-deadlines".

    A timer thread per exchange cost its start per call: nothing on a quiet worker, but in a worker of
    64 threads that all want the GIL, 10-40 ms of each call's time (docs/performance.md, "The leases'
    one renewing thread"). Watching an exchange is an entry in a heap; the thread sleeps until the
    earliest deadline and is woken early only when an exchange comes due before it. An exchange's
    connections are shut under the watchdog's lock and its entry is cancelled under it too, so once
    `cancel` returns nothing of that exchange is shut any more (a connection it gave back to its
    session's pool is another call's by then)."""

    def __init__(self):
        self._forget()
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        """No exchange watched and no thread yet: at the start, and in a forked child, which has neither
        the parent's thread nor a lock another of the parent's threads may have held at the fork."""
        self._lock = threading.Condition()
        self._heap: list[list] = []  # [when (monotonic), order, the deadline or None once cancelled]
        self._order = itertools.count()
        self._running = False

    def watch(self, seconds: float, deadline: "_Deadline") -> list:
        """Shut `deadline`'s connections `seconds` from now unless cancelled; the entry to cancel."""
        entry = [time.monotonic() + seconds, next(self._order), deadline]
        with self._lock:
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name="outbound-deadlines", daemon=True).start()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._lock.notify()
        return entry

    def cancel(self, entry: list) -> None:
        with self._lock:
            entry[2] = None

    def _run(self) -> None:
        with self._lock:
            while True:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                now = time.monotonic()
                if self._heap and self._heap[0][0] <= now:
                    heapq.heappop(self._heap)[2].shut()
                    continue
                self._lock.wait(self._heap[0][0] - now if self._heap else None)


_watchdog = _Watchdog()


@contextlib.contextmanager
def _deadline_kept(seconds: float | None, *, address_refusal=None):
    """Within the block, the connections used are shut once `seconds` have passed (None: no
    deadline; by the process's one watchdog thread, `_Watchdog`), and made only to addresses
    `address_refusal` allows (None: any)."""
    deadline = _Deadline(address_refusal)
    if seconds is None and address_refusal is None:
        yield deadline
        return
    previous = getattr(_Deadline.current, "value", None)
    _Deadline.current.value = deadline
    entry = _watchdog.watch(seconds, deadline) if seconds is not None else None
    try:
        yield deadline
    finally:
        if entry is not None:
            _watchdog.cancel(entry)
        _Deadline.current.value = previous


def _session_build(headers: dict | None = None, *, pool_size: int = 1) -> requests.Session:
    session = requests.Session()
    # No proxy, .netrc or CA bundle from the environment by requests' own reading; but the CA bundle
    # an operator names (REQUESTS_CA_BUNDLE, as requests reads it) is the trust of every call: a
    # partner's system inside their own network may present a certificate of their own CA.
    session.trust_env = False
    session.verify = os.environ.get("REQUESTS_CA_BUNDLE") or True
    # We never need another system's cookies, and a shared jar would mix calls of different threads.
    session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    session.headers.update(headers or {})
    adapter = _WatchedAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


_sessions: dict[str, requests.Session] = {}
_sessions_pid: int | None = None
_sessions_lock = threading.Lock()


def pooled(kind: str, *, headers: dict | None = None) -> requests.Session:
    """This process's pooled session of `kind` (built with `headers` the first time)."""
    global _sessions_pid
    pid = os.getpid()
    with _sessions_lock:
        if _sessions_pid != pid:
            # A fresh process (or a fork of one that had sessions): never reuse inherited sockets.
            _sessions.clear()
            _sessions_pid = pid
        if kind not in _sessions:
            _sessions[kind] = _session_build(headers, pool_size=POOL_SIZE)
        return _sessions[kind]


def sessions_close() -> None:
    """Close this process's pooled sessions (tests; worker shutdown)."""
    with _sessions_lock:
        for session in _sessions.values():
            session.close()
        _sessions.clear()


def one_off(*, headers: dict | None = None) -> requests.Session:
    """A session of its own, for one exchange (`with one_off() as session:`)."""
    return _session_build(headers)


# Exchanges ---------------------------------------------------------------------------------------


def _causes(exc: BaseException):
    """The exception and every one it wraps (requests wraps urllib3's, which wraps the socket's)."""
    seen, stack = set(), [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [current.__cause__, current.__context__, getattr(current, "reason", None), *current.args]
        stack += [inner for inner in wrapped if isinstance(inner, BaseException)]  # ssl's `reason` is a str


def cause_of(exc: BaseException, *, limit: float) -> str:
    """Why an exchange got no answer, in an operator's words (no URL: the caller names the host).
    `limit`: the seconds the exchange was given."""
    causes = list(_causes(exc))
    if refused := address_refused(exc):
        return str(refused)
    if isinstance(exc, requests.Timeout) or any(isinstance(cause, TimeoutError | socket.timeout) for cause in causes):
        return f"Timeout: no answer within {limit:g} s"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS handshake failed (the endpoint's certificate or TLS setup)"
    if any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        return "connection refused (nothing listens at the endpoint's address and port)"
    if any(isinstance(cause, socket.gaierror) for cause in causes):
        return "host name not found (DNS)"
    if isinstance(exc, requests.RequestException):
        return f"{type(exc).__name__}: could not connect"
    return type(exc).__name__


def _limit(timeout, deadline: float | None) -> float:
    if deadline is not None:
        return deadline
    return float(timeout[-1] if isinstance(timeout, tuple | list) else timeout)


def exchange(
    method: str,
    url: str,
    *,
    channel: str,
    session: requests.Session,
    timeout,
    deadline: float | None = None,
    shown: str | None = None,
    address_refusal=None,
    **kwargs,
) -> requests.Response:
    """Send one request and read its whole answer, which is returned whatever its status.

    `timeout`: requests' (connect, read); `deadline`: seconds for the whole exchange, or None;
    `address_refusal`: the addresses it may not connect to, as `exchange_kept`'s.
    Raises requests' exception when no answer came (the try is noted with its cause). An answer
    other than 2xx is noted with its start, passed through the log redaction; a 2xx's is data
    its caller reads, and not kept.
    """
    started_at, started = timezone.now(), time.monotonic()
    shown = shown or url
    try:
        with _deadline_kept(deadline, address_refusal=address_refusal) as watch:
            response = session.request(method, url, timeout=timeout, allow_redirects=False, **kwargs)
    except requests.RequestException as exc:
        over = watch.over or (deadline is not None and time.monotonic() - started >= deadline)
        cause = f"Timeout: no answer within {deadline:g} s" if over else cause_of(exc, limit=_limit(timeout, None))
        _note(Try(channel, method, shown, started_at, _ms(started), None, cause))
        raise
    status = response.status_code
    answer = "" if 200 <= status < 300 else redact(response.content[:KEPT].decode("utf-8", "replace"))
    _note(Try(channel, method, shown, started_at, _ms(started), status, answer))
    return response


def exchange_kept(
    method: str,
    url: str,
    *,
    channel: str,
    session: requests.Session,
    deadline: float,
    shown: str | None = None,
    address_refusal=None,
    **kwargs,
) -> Try:
    """Send one request whose answer matters by its status and its start only; never raises for a
    failed exchange: the Try says what came (status and start) or why nothing did.

    The whole exchange (connect, send, the status and at most KEPT bytes of the answer) ends by
    `deadline` seconds: the answer is streamed, only its start is read, and the connection is
    closed, not drained. A status that arrived in time counts even if the rest of the answer did not.
    `address_refusal(ip_address) -> str | None`: why the exchange may not connect to an address
    (checked on every address the host resolves to, the connection pinned to the one checked, and
    on the connected peer), None to allow it; the try then says so in plain words.
    """
    started_at, started = timezone.now(), time.monotonic()
    ends = started + deadline
    status, start = None, b""
    headers = {**kwargs.pop("headers", {}), "accept-encoding": "identity"}
    try:
        with (
            _deadline_kept(deadline, address_refusal=address_refusal) as watch,
            session.request(
                method, url, headers=headers, timeout=deadline, allow_redirects=False, stream=True, **kwargs
            ) as answer,
        ):
            status = answer.status_code
            while len(start) < KEPT and time.monotonic() < ends:
                piece = answer.raw.read1(KEPT - len(start))
                if not piece:
                    break
                start += piece
        text = start.decode("utf-8", "replace")
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        if status is not None:  # the answer's status came; its body was cut at the deadline
            text = start.decode("utf-8", "replace")
        elif watch.over or time.monotonic() >= ends:
            text = f"Timeout: no answer within {deadline:g} s"
        else:
            text = cause_of(exc, limit=deadline)
    attempt = Try(channel, method.upper(), shown or url, started_at, _ms(started), status, text)
    _note(attempt)
    return attempt


def _ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
