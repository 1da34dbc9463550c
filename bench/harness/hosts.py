"""Several hosts on one machine: network namespaces on a bridge, and the servers each one runs.

bench/harness/cluster.py deploys the application on this layout, every name and address its own:

    bridge pd-br0 10.231.0.1   this process: the platform (the sandbox under gunicorn, behind the
                               emulator of its latency, bench/harness/latency_proxy.py) and the drill
    pd-db     10.231.0.2       PostgreSQL (a cluster of its own), Redis (cache), RabbitMQ (broker)
    pd-lb     10.231.0.3       haproxy, the load balancer in front of the two web hosts
    pd-web1   10.231.0.11      gunicorn config.wsgi (the repository's gunicorn.conf.py)
    pd-web2   10.231.0.12      gunicorn config.wsgi
    pd-wk1    10.231.0.21      a Celery worker
    pd-wk2    10.231.0.22      a Celery worker, and the one beat

Every server runs inside its host's namespace (`ip netns exec`), bound to that host's address, so
a host whose link is down is cut off from all of them, as a machine whose network failed. Needs
root, `ip`, haproxy, rabbitmq-server, redis-server and PostgreSQL's server binaries
(`missing()` says which are absent). `Hosts.destroy()` stops every process inside the namespaces
and deletes the namespaces, their links and the bridge; the drill calls it in a `finally`.
"""

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.harness import stack

NET = os.environ.get("BENCH_HOSTS_NET", "10.231.0")  # a private /24 of the drill's own
# The names of its namespaces, bridge and RabbitMQ node: another prefix and /24 run a second drill
# beside the first (the suite's short schedule beside a long run).
PREFIX = os.environ.get("BENCH_HOSTS_PREFIX", "pd")
BRIDGE = f"{PREFIX}-br0"
PLATFORM_ADDRESS = f"{NET}.1"  # the bridge's address: this process and the platform
ADDRESSES = {"db": 2, "lb": 3, "web1": 11, "web2": 12, "wk1": 21, "wk2": 22}
PORT_LB = 8130
PORT_WEB = 8131
PORT_PLATFORM = 8132
PORT_POSTGRES = 8133
PORT_REDIS = 8134
PORT_AMQP = 8135
PORT_RABBIT_DIST = 8136
PORT_PLATFORM_LATENT = 8137  # the latency emulator in front of the platform: what the worker hosts call
DATABASE = "partner_hosts"
RABBIT_NODE = f"{PREFIX}-rabbit@localhost"
PG_BIN = Path(os.environ.get("BENCH_PG_BIN", "/usr/lib/postgresql/15/bin"))
RABBIT_BIN = Path("/usr/lib/rabbitmq/bin")


def address(host: str) -> str:
    return f"{NET}.{ADDRESSES[host]}"


def namespace(host: str) -> str:
    return f"{PREFIX}-{host}"


def missing() -> list[str]:
    """What this machine lacks to run the hosts (empty: it can)."""
    absent = []
    if os.geteuid() != 0:
        absent.append("root (network namespaces)")
    for tool in ("ip", "haproxy", "redis-server"):
        if shutil.which(tool) is None:
            absent.append(tool)
    if os.geteuid() == 0 and not absent and not _namespaces_work():
        absent.append("network namespaces (root here cannot make one: a container without CAP_SYS_ADMIN?)")
    if not (RABBIT_BIN / "rabbitmq-server").exists():
        absent.append("rabbitmq-server")
    if not (PG_BIN / "postgres").exists():
        absent.append(f"PostgreSQL server binaries ({PG_BIN})")
    return absent


def _namespaces_work() -> bool:
    """Whether this process can make a network namespace (a throwaway one, gone when `true` exits)."""
    try:
        return subprocess.run(["unshare", "--net", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@dataclass
class Urls:
    """The addresses the processes of every host are given."""

    database: str
    cache: str
    broker: str
    balancer: str
    platform: str  # the sandbox itself, answering in about a millisecond
    platform_latent: str  # the same through the latency emulator: the platform the hosts call


class Hosts:
    """The namespaces, their links, the servers on pd-db and the load balancer; see the module."""

    def __init__(self):
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{PREFIX}-drill-"))
        self.scratch.chmod(0o755)  # PostgreSQL's and RabbitMQ's folders inside are reached by their users
        self.processes: dict[str, stack.Process] = {}
        self.urls = Urls(
            database=f"postgres://postgres@{address('db')}:{PORT_POSTGRES}/{DATABASE}",
            cache=f"redis://{address('db')}:{PORT_REDIS}/0",
            broker=f"amqp://guest:guest@{address('db')}:{PORT_AMQP}//",
            balancer=f"http://{address('lb')}:{PORT_LB}",
            platform=f"http://{PLATFORM_ADDRESS}:{PORT_PLATFORM}",
            platform_latent=f"http://{PLATFORM_ADDRESS}:{PORT_PLATFORM_LATENT}",
        )

    # The network --------------------------------------------------------------------------------

    def create(self) -> None:
        self.destroy_leftovers()
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{PLATFORM_ADDRESS}/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        for host in ADDRESSES:
            name, inside = namespace(host), f"{namespace(host)}-in"
            _ip("netns", "add", name)
            _ip("link", "add", name, "type", "veth", "peer", "name", inside)
            _ip("link", "set", inside, "netns", name)
            _ip("-n", name, "link", "set", inside, "name", "eth0")
            _ip("-n", name, "addr", "add", f"{address(host)}/24", "dev", "eth0")
            _ip("-n", name, "link", "set", "eth0", "up")
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("link", "set", name, "master", BRIDGE)
            _ip("link", "set", name, "up")

    def cut(self, host: str) -> None:
        """The host's link down: it reaches nothing and nothing reaches it; its processes run on."""
        _ip("-n", namespace(host), "link", "set", "eth0", "down")

    def reconnect(self, host: str) -> None:
        _ip("-n", namespace(host), "link", "set", "eth0", "up")

    def destroy(self) -> None:
        """Stop every process we started, in the namespaces or not, then remove the network."""
        for process in reversed(list(self.processes.values())):
            process.stop(timeout=15)
        self.processes.clear()
        self.destroy_leftovers()
        shutil.rmtree(self.scratch, ignore_errors=True)

    @staticmethod
    def destroy_leftovers() -> None:
        """Remove the drill's namespaces (after stopping what still runs in them: epmd, say) and bridge."""
        listed = _ip("netns", "list", check=False).stdout.split()
        for host in ADDRESSES:
            name = namespace(host)
            if name not in listed:
                continue
            for sig in (signal.SIGTERM, signal.SIGKILL):
                pids = [int(pid) for pid in _ip("netns", "pids", name, check=False).stdout.split()]
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, sig)
                deadline = time.monotonic() + 10
                while pids and time.monotonic() < deadline and _ip("netns", "pids", name, check=False).stdout.strip():
                    time.sleep(0.2)
            _ip("netns", "del", name, check=False)
            _ip("link", "del", name, check=False)
        _ip("link", "del", BRIDGE, check=False)

    # Processes ----------------------------------------------------------------------------------

    def spawn(self, name: str, host: str | None, argv: list[str], env: dict | None = None) -> stack.Process:
        """Start `argv` on `host` (None: this machine's namespace), logged to var/bench/hosts-NAME.log."""
        command = ["ip", "netns", "exec", namespace(host), *argv] if host else argv
        self.processes[name] = stack.spawn(name, command, env or dict(os.environ), log=f"hosts-{name}")
        return self.processes[name]

    def stop(self, name: str, *, sig: int = signal.SIGTERM, timeout: float = 30) -> None:
        process = self.processes.pop(name)
        if sig == signal.SIGTERM:
            process.stop(timeout=timeout)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.popen.pid, sig)
        process.popen.wait(timeout=timeout)

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds so far of each process we started: its live processes' user and system time,
        and that of the children they reaped (PostgreSQL's backends that ended, say)."""
        return {
            name: sum(stack.cpu_seconds(pid, reaped=True) for pid in process.pids())
            for name, process in self.processes.items()
        }

    # The database host --------------------------------------------------------------------------

    def postgres_start(self) -> None:
        """A cluster of the drill's own on pd-db (fsync off: it is thrown away after the drill)."""
        data = self.scratch / "pg"
        data.mkdir()
        postgres = pwd.getpwnam("postgres")
        os.chown(data, postgres.pw_uid, postgres.pw_gid)
        as_postgres = ["setpriv", f"--reuid={postgres.pw_uid}", f"--regid={postgres.pw_gid}", "--init-groups"]
        initdb = [*as_postgres, str(PG_BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
        made = subprocess.run(initdb, capture_output=True, text=True)
        if made.returncode:
            raise RuntimeError(f"initdb failed: {made.stderr.strip()}")
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {NET}.0/24 trust\n")
        options = [f"listen_addresses={address('db')}", f"port={PORT_POSTGRES}", f"unix_socket_directories={data}"]
        options += ["max_connections=200", "fsync=off", "full_page_writes=off"]
        server = [*as_postgres, str(PG_BIN / "postgres"), "-D", str(data)]
        self.spawn("postgres", "db", server + [word for option in options for word in ("-c", option)])
        self.wait_port("postgres", address("db"), PORT_POSTGRES)
        import psycopg

        for _ in range(50):
            try:
                with psycopg.connect(self.urls.database.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
                    conn.execute(f'CREATE DATABASE "{DATABASE}"')
                return
            except psycopg.OperationalError:  # starting up
                time.sleep(0.2)
        raise RuntimeError(f"PostgreSQL on pd-db did not accept connections:\n{self.processes['postgres'].log_tail()}")

    def redis_start(self) -> None:
        argv = ["redis-server", "--bind", address("db"), "--port", str(PORT_REDIS), "--save", "", "--appendonly", "no"]
        self.spawn("redis", "db", [*argv, "--protected-mode", "no", "--dir", str(self.scratch)])
        self.wait_port("redis", address("db"), PORT_REDIS)

    def rabbitmq_start(self, timeout: float = 120) -> float:
        """The node of the drill's own on pd-db (its own epmd, inside the namespace); seconds it took."""
        base = self.scratch / "rabbit"
        if not base.exists():
            base.mkdir()
            (base / "rabbitmq.conf").write_text(
                f"loopback_users = none\nlisteners.tcp.default = {address('db')}:{PORT_AMQP}\n"
            )
            (base / "enabled_plugins").write_text("[].\n")
        env = {
            **os.environ,
            "HOME": str(base),  # its Erlang cookie
            "RABBITMQ_NODENAME": RABBIT_NODE,
            "RABBITMQ_DIST_PORT": str(PORT_RABBIT_DIST),
            "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
            "RABBITMQ_LOG_BASE": str(base / "log"),
            "RABBITMQ_PID_FILE": str(base / "pid"),
        }
        began = time.monotonic()
        self.spawn("rabbitmq", "db", [str(RABBIT_BIN / "rabbitmq-server")], env)
        self.wait_port("rabbitmq", address("db"), PORT_AMQP, timeout=timeout)
        return time.monotonic() - began

    def rabbitmq_stop(self) -> float:
        """Stop the node (SIGTERM: RabbitMQ shuts down cleanly, durable queues kept); seconds it took."""
        began = time.monotonic()
        self.stop("rabbitmq", timeout=60)
        return time.monotonic() - began

    # The load balancer --------------------------------------------------------------------------

    def balancer_start(self) -> None:
        """haproxy on pd-lb: round robin over the two web hosts, each checked on /healthz/live every
        second (down after 2 failures, 3 s allowed per check: the machine's CPUs are shared); a
        request whose connection fails is tried on the other."""
        servers = "\n".join(
            f"    server {host} {address(host)}:{PORT_WEB} check inter 1s fall 2 rise 2" for host in ("web1", "web2")
        )
        config = self.scratch / "haproxy.cfg"
        config.write_text(
            "global\n    maxconn 2000\n"
            "defaults\n    mode http\n    timeout connect 1s\n    timeout check 3s\n"
            "    timeout client 30s\n    timeout server 30s\n"
            "    retries 2\n    option redispatch\n"
            f"frontend partner\n    bind {address('lb')}:{PORT_LB}\n    default_backend web\n"
            "backend web\n    balance roundrobin\n    option httpchk GET /healthz/live\n"
            f"{servers}\n"
        )
        self.spawn("haproxy", "lb", ["haproxy", "-db", "-f", str(config)])
        self.wait_port("haproxy", address("lb"), PORT_LB)

    # Waiting ------------------------------------------------------------------------------------

    def wait_port(self, name: str, host: str, port: int, timeout: float = 60) -> None:
        stack.wait_port(self.processes[name], host, port, timeout)
