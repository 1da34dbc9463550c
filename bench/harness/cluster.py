"""The application deployed on bench/harness/hosts.py's hosts, and this process as its platform
(docs/performance.md, "How the entries measure"). The platform's access log (the caller's address
from the emulator's X-Forwarded-For) says which host sent which call.
"""

import os
import re
import threading
import time
from collections import Counter

from bench.harness import stack
from bench.harness.hosts import PLATFORM_ADDRESS, PORT_PLATFORM, PORT_PLATFORM_LATENT, PORT_WEB, Hosts, address
from bench.harness.platform import PlatformSide

# Shorter than production's (15 s, 120 s, 30 s), so a cut-off host's order is taken over within
# seconds; not so short that a renewal every third of it is missed on a busy shared machine.
LEASE_SECONDS = 10
STALL_SECONDS = 20
SWEEP_INTERVAL = 5
WEB_WORKERS = 2
# The platform's access log names the caller the emulator saw (X-Forwarded-For), not the emulator.
PLATFORM_ACCESS_FORMAT = '%({x-forwarded-for}i)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'
ACCESS_LINE = re.compile(
    r'^(?P<client>\S+) "(?P<method>[A-Z]+) (?P<path>\S+) [^"]*" (?P<status>\d{3})(?: \S+ (?P<ms>\d+)ms)?'
)


class Cluster(PlatformSide):
    """The hosts and their processes, and what this process (the platform's side) needs to drive them."""

    def __init__(self, hosts: Hosts, *, api_ms: float = 300, upload_ms: float = 500, extra_env=None):
        self.hosts, self.api_ms, self.upload_ms = hosts, api_ms, upload_ms
        self.extra_env = extra_env or (lambda env: env)  # a caller's own settings over the cluster's
        self.concurrency: dict[str, int | None] = {}  # threads per worker host (None: the settings')
        self.platform_log = stack.LOGS / "hosts-platform-access.log"
        self.ours_url = hosts.urls.balancer  # the sandbox's webhooks and our status endpoint: the load balancer
        self.restarts: Counter = Counter()
        self._closing = threading.Event()
        self._supervisor = threading.Thread(target=self._supervise, name="worker-supervisor", daemon=True)

    def env(self, *, sandbox: bool) -> dict:
        urls = self.hosts.urls
        env = stack.app_env(
            database=urls.database,
            public_base_url=urls.balancer,
            sandbox=sandbox,
            settings=stack.SETTINGS,  # the sandbox's upload slots are http on a private address
            DJANGO_ALLOWED_HOSTS="*",
            CELERY_BROKER_URL=urls.broker,
            CELERY_RESULT_BACKEND=f"{urls.cache[:-2]}/1",
            CACHE_URL=urls.cache,
            SVC_BASE_URL=f"{urls.platform_latent}/sandbox",
            SVC_TOKEN_URL=f"{urls.platform_latent}/sandbox/oauth2/v1/token",
            SANDBOX_BASE_URL=f"{urls.platform_latent}/sandbox",  # references and upload locations too
            LEASE_SECONDS=LEASE_SECONDS,
            STALL_SECONDS=STALL_SECONDS,
            SWEEP_INTERVAL=SWEEP_INTERVAL,
            SANDBOX_WEBHOOK_BACKOFF=0.5,
            SANDBOX_WEBHOOK_BACKOFF_MAX=4,
            SANDBOX_WEBHOOK_MAX_ATTEMPTS=10,
            SANDBOX_WEBHOOK_CONNECT_TIMEOUT=2,
            PROMETHEUS_MULTIPROC_DIR=str(self.hosts.scratch / "metrics"),
        )
        return self.extra_env(env)

    def gunicorn(self, name: str, host: str | None, bind: str, *, sandbox: bool, workers: int, extra=()) -> None:
        log = stack.LOGS / f"hosts-{name}-access.log"
        argv = [str(stack.VENV_BIN / "gunicorn"), "config.wsgi", "--bind", bind, "--workers", str(workers)]
        self.hosts.spawn(name, host, [*argv, "--access-logfile", str(log), *extra], self.env(sandbox=sandbox))
        ip, port = bind.split(":")
        self.hosts.wait_port(name, ip, int(port))

    def web_start(self, host: str) -> None:
        self.gunicorn(host, host, f"{address(host)}:{PORT_WEB}", sandbox=False, workers=WEB_WORKERS)

    def worker_start(self, host: str, concurrency: int | None = None) -> None:
        """The worker command of the deployment (its pool and threads from the settings); with
        `concurrency`, that many threads (CELERY_WORKER_CONCURRENCY), as an operator sizes a host."""
        self.concurrency[host] = concurrency
        env = self.env(sandbox=False)
        if concurrency:
            env["CELERY_WORKER_CONCURRENCY"] = str(concurrency)
        argv = [stack.PYTHON, "-m", "celery", "-A", "config", "worker", "--loglevel=WARNING"]
        argv += ["--without-gossip", "--without-mingle", f"--hostname={host}@%h"]
        self.hosts.spawn(host, host, argv, env)

    def command(self, *args: str, stdin: str = "", sandbox: bool = False, capture: bool = False) -> str:
        """`manage.py ARGS` as an operator runs it on a host of ours (a password on standard input)."""
        return stack.manage(*args, env=self.env(sandbox=sandbox), stdin=stdin, capture=capture)

    def start(self) -> None:
        (self.hosts.scratch / "metrics").mkdir()
        self.hosts.create()
        self.hosts.postgres_start()
        self.hosts.redis_start()
        self.hosts.rabbitmq_start()
        self.command("migrate", "--no-input", "-v", "0", sandbox=True)  # the sandbox's tables too
        self.platform_log.write_text("")
        self.gunicorn(
            "platform",
            None,
            f"{PLATFORM_ADDRESS}:{PORT_PLATFORM}",
            sandbox=True,
            workers=4,
            extra=("--access-logformat", PLATFORM_ACCESS_FORMAT),
        )
        latent = ["--bind", PLATFORM_ADDRESS, "--port", str(PORT_PLATFORM_LATENT), "--upload-ms", str(self.upload_ms)]
        latent += ["--upstream", f"{PLATFORM_ADDRESS}:{PORT_PLATFORM}", "--api-ms", str(self.api_ms)]
        self.hosts.spawn("latency", None, [stack.PYTHON, "-m", "bench.harness.latency_proxy", *latent])
        self.hosts.wait_port("latency", PLATFORM_ADDRESS, PORT_PLATFORM_LATENT)
        for host in ("web1", "web2"):
            self.web_start(host)
        self.hosts.balancer_start()
        self.django_setup()
        self.ours_set_up()
        for host in ("wk1", "wk2"):
            self.worker_start(host)
        beat = [stack.PYTHON, "-m", "celery", "-A", "config", "beat", "--loglevel=WARNING"]
        self.hosts.spawn("beat", "wk2", [*beat, "-s", str(self.hosts.scratch / "beat")], self.env(sandbox=False))
        self.workers_ready(["wk1", "wk2"])
        self._supervisor.start()

    def _supervise(self) -> None:
        """What a worker host's service manager does (systemd's Restart=always, a pod's restart
        policy): a Celery worker that exited is started again, and counted."""
        while not self._closing.wait(1.0):
            for host in ("wk1", "wk2"):
                process = self.hosts.processes.get(host)
                if process is not None and process.popen.poll() is not None:
                    self.restarts[host] += 1
                    self.worker_start(host, self.concurrency.get(host))

    def close(self) -> None:
        self._closing.set()
        if self._supervisor.is_alive():
            self._supervisor.join(timeout=5)

    def django_setup(self) -> None:
        """This process configured as the platform (the sandbox, on the cluster's database)."""
        from django.apps import apps

        if apps.ready:
            raise RuntimeError("the cluster configures Django itself: run it in a process of its own")
        os.environ.update(self.env(sandbox=True))
        import django

        django.setup()

    def workers_ready(self, hosts: list[str], timeout: float = 90) -> None:
        from config.celery import app

        deadline = time.monotonic() + timeout
        wanted = {f"{host}@" for host in hosts}
        while time.monotonic() < deadline:
            # A connection of its own each time: one kept from before a broker restart is dead.
            with app.connection_for_write() as connection:
                replies = app.control.ping(timeout=1, connection=connection)
            answered = {name.split("@")[0] + "@" for reply in replies for name in reply}
            if wanted <= answered:
                return
        raise RuntimeError(f"worker hosts {hosts} did not answer a ping within {timeout:g}s")

    # The platform's side ------------------------------------------------------------------------

    def calls(self, offset: int = 0) -> list[dict]:
        """The platform's access log from byte `offset`: who called what, and its answer."""
        with self.platform_log.open() as handle:
            handle.seek(offset)
            lines = handle.read().splitlines()
        return [match.groupdict() for line in lines if (match := ACCESS_LINE.match(line))]

    def patches(self, ids: list[str]) -> dict[str, list[dict]]:
        """The PATCHes of each transaction's response the platform accepted, in order (its records)."""
        from partner.sandbox.models import ResponsePatch

        found = {txn: [] for txn in ids}
        for patch in ResponsePatch.objects.filter(transaction_id__in=ids).order_by("transaction_id", "number"):
            found[patch.transaction_id].append(patch.payload)
        return found
