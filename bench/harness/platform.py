"""The platform's side of the order benchmarks (docs/performance.md, "How the entries measure"): `Platform`
runs our gunicorn and the platform's on the bench database, this process the platform's back end;
`emulators_start` its latency (bench/harness/latency_proxy.py); `Admin` a staff member's browser on our admin.
"""

import contextlib
import re
import subprocess
import time
from collections import Counter
from html.parser import HTMLParser
from urllib.parse import urljoin

import requests

from bench.harness import stack

FINAL = ("REQUEST_COMPLETED", "FAILED", "DECLINED")
LENDER, LENDER_PASSWORD = "lender.demo", "demo-password-1"  # the sandbox's demo lender (partner/sandbox/demo.py)
# The emulated platform's gunicorn: the sandbox's URLs without our middleware (docs/performance.md,
# "What the emulated platform costs").
PLATFORM_SETTINGS = "bench.harness.platform_settings"
ACCESS_LINE = re.compile(r"^(?P<method>[A-Z]+) (?P<path>/sandbox/\S*) (?P<status>\d{3})$")


def call_kind(path: str) -> str:
    """What a call to the platform was, by its path."""
    kinds = (("/oauth2/v1/token", "token"), ("/response/resources", "slots"), ("/response", "patch"))
    if path.startswith("/sandbox/uploads/"):
        return "upload"
    for end, kind in kinds:
        if path.endswith(end):
            return kind
    return "event" if "/events/" in path else "transaction" if "/transactions/" in path else "other"


class PlatformSide:
    """This process as the platform's back end and its lender, here (`Platform`) and on the hosts
    (bench/harness/cluster.py): `command` is an operator's manage.py; `ours_url` our web server or balancer."""

    ours_url: str

    def command(self, *args: str, stdin: str = "", capture: bool = False) -> str:
        raise NotImplementedError

    def ours_set_up(self) -> None:
        """The sandbox seeded, its products' webhooks sent to us; our side set up as an operator sets it up."""
        from partner.sandbox.seeding import sandbox_seed

        self.seed = sandbox_seed(public_base_url=self.ours_url)
        self.command("partner_account", LENDER, "--company", "DEMO01", stdin=LENDER_PASSWORD)
        for attempt in range(3):  # the platform's first answers may be slow on a busy machine
            try:
                self.command("sync_products", "--pull")
                break
            except subprocess.CalledProcessError:
                if attempt == 2:
                    raise
                time.sleep(3)

    def orders_create(self, count: int, *, product: str = "address-verification") -> list[str]:
        """`count` transactions of the demo lender, each sending its signed `created` webhook to us."""
        from partner.sandbox.transactions import transaction_create

        seed = self.seed
        user, loan = seed.users[LENDER], seed.loans[2]
        return [transaction_create(product=seed.products[product], user=user, loan=loan).id for _ in range(count)]

    def statuses(self, ids) -> dict[str, str]:
        """Each transaction's order status, as our `GET /v1/status/{transaction}` answers it."""
        found, session = {}, requests.Session()
        session.trust_env = False
        for txn in ids:
            answer = session.get(f"{self.ours_url}/v1/status/{txn}", timeout=30)
            found[txn] = answer.json()["status"] if answer.status_code == 200 else f"HTTP {answer.status_code}"
        return found


class Platform(PlatformSide):
    """Our web server and the platform's, seeded and set up; this process configured as both."""

    def __init__(
        self,
        *,
        database: str,
        web_workers: int = 4,
        platform_threads: int = 1,
        lifetime: int = 3600,
        name: str = "orders",
    ):
        self.port, self.ours_port, self.name, self.web_workers = stack.free_port(), stack.free_port(), name, web_workers
        self.platform_threads = platform_threads
        self.url, self.lifetime, self.emulators = f"http://127.0.0.1:{self.port}", lifetime, ()
        ours, settings = f"http://127.0.0.1:{self.ours_port}", stack.SETTINGS
        calling = {**self._calling(self.url), "SANDBOX_TOKEN_LIFETIME": lifetime}
        self.env = stack.app_env(database=database, public_base_url=ours, sandbox=True, settings=settings, **calling)
        self.access_log = stack.LOGS / f"{name}-platform-access.log"

    @staticmethod
    def _calling(base: str) -> dict:
        return {"SVC_BASE_URL": f"{base}/sandbox", "SVC_TOKEN_URL": f"{base}/sandbox/oauth2/v1/token"}

    def __enter__(self) -> "Platform":
        stack.manage("migrate", "--no-input", "-v", "0", env=self.env)  # the sandbox's tables too
        stack.django_setup(self.env)
        stack.LOGS.mkdir(parents=True, exist_ok=True)
        self.access_log.write_text("")
        web = {"workers": self.web_workers}
        self.ours = stack.gunicorn_start(f"{self.name}-web", "config.wsgi", self.env, port=self.ours_port, **web)
        web |= {"port": self.port, "access_log": self.access_log, "threads": self.platform_threads}
        platform_env = {**self.env, "DJANGO_SETTINGS_MODULE": PLATFORM_SETTINGS}  # the sandbox alone
        self.web = stack.gunicorn_start(f"{self.name}-platform", "config.wsgi", platform_env, **web)
        self.ours_url = self.ours.url
        self.ours_set_up()
        return self

    def __exit__(self, *exc) -> None:
        self.ours.stop()
        self.web.stop()

    def command(self, *args: str, stdin: str = "", capture: bool = True) -> str:
        """`manage.py ARGS` as an operator runs it, against our settings (a password on standard input)."""
        return stack.manage(*args, env=self.env, stdin=stdin, capture=capture)

    def emulators_start(self, closing: contextlib.ExitStack, *, api_ms: float, upload_ms: float) -> tuple:
        """Two latency emulators (bench/harness/latency_proxy.py) in front of the platform until `closing`
        closes: (fast, with no wait; slow, at `api_ms`/`upload_ms`)."""
        for label, api, upload in (("fast", 0, 0), ("slow", api_ms, upload_ms)):
            argv = [stack.PYTHON, "-m", "bench.harness.latency_proxy", "--port", str(port := stack.free_port())]
            argv += ["--upstream", f"127.0.0.1:{self.port}", "--api-ms", str(api), "--upload-ms", str(upload)]
            process = stack.spawn(f"{self.name}-platform-{label}", argv, dict(stack.ENVIRON_AT_START), port=port)
            closing.callback(process.stop)
            stack.wait_port(process)
            self.emulators += (process,)
        return self.emulators

    def worker(self, name: str, *, pool: str, concurrency: int, base: str | None = None, sender=False) -> "WorkerHost":
        """A worker host of ours, ready, calling the platform at `base` (its own address by default, which
        the sandbox's references and upload locations name too), with the Redis databases flushed: a
        Celery worker and, with `sender`, a sender beside it (`--sender`, its own threads)."""
        from django.conf import settings

        base = base or self.url
        settings.SANDBOX_BASE_URL = f"{base}/sandbox"
        stack.redis_flush()
        env = {**self.env, **self._calling(base)}
        host = WorkerHost(stack.celery_start(name, env, concurrency=concurrency, pool=pool))
        try:
            if sender:
                host.sender = stack.celery_start(f"{name}-sender", env, concurrency=None, pool=pool, sender=True)
            stack.worker_ready(names=host.nodes())
        except Exception:
            host.stop()
            raise
        return host

    def patches(self, ids: list[str]) -> dict[str, int]:
        """The PATCHes of its response the platform accepted, by transaction."""
        from django.db.models import Count

        from partner.sandbox.models import Transaction

        return dict(Transaction.objects.filter(id__in=ids).annotate(n=Count("patches")).values_list("id", "n"))

    def orders_wait(self, ids: list[str], *, timeout: float) -> tuple[dict, float | None]:
        """Until our status endpoint says every order is finished, asked once each has a PATCH (or every
        10 s): (the statuses counted, the monotonic time all were finished; None after `timeout`)."""
        pending, seen = set(ids), {}
        deadline, asked = time.monotonic() + timeout, time.monotonic()
        while pending and time.monotonic() < deadline:
            if all(self.patches(list(pending)).values()) or time.monotonic() - asked > 10:
                asked = time.monotonic()
                seen.update(self.statuses(pending))
                pending -= {txn for txn in pending if seen[txn] in FINAL}
            if pending:
                time.sleep(0.25)
        done = None if pending else time.monotonic()
        return dict(Counter(seen.get(txn, "NO ANSWER") for txn in ids)), done

    def records(self, ids: list[str]) -> tuple[dict, dict]:
        """By transaction: (its first webhook's creation, epoch s; the PATCHes accepted, [(epoch s, payload)])."""
        from django.db.models import Min

        from partner.sandbox.models import ResponsePatch, WebhookDelivery

        sent = WebhookDelivery.objects.filter(resource_id__in=ids).values("resource_id").annotate(at=Min("created_at"))
        patches = {txn: [] for txn in ids}
        for txn, at, payload in ResponsePatch.objects.filter(transaction_id__in=ids).values_list(
            "transaction_id", "created_at", "payload"
        ):
            patches[txn].append((at.timestamp(), payload))
        return {row["resource_id"]: row["at"].timestamp() for row in sent}, patches

    def calls(self, offset: int = 0) -> tuple[Counter, Counter]:
        """(calls by kind, answers by status) of the platform's access log after byte `offset`."""
        time.sleep(1.0)  # the access log is written after each answer
        with self.access_log.open() as handle:
            handle.seek(offset)
            found = [match for line in handle.read().splitlines() if (match := ACCESS_LINE.match(line.strip()))]
        return Counter(call_kind(match["path"]) for match in found), Counter(match["status"] for match in found)


class WorkerHost:
    """A worker host's Celery processes: the worker, which consumes every queue, and, where one runs, a
    sender beside it (the events' queue only). Its `pids` are both's: the host's CPU and memory."""

    def __init__(self, worker: stack.Process, sender: stack.Process | None = None):
        self.worker, self.sender = worker, sender

    @property
    def node(self) -> str:
        """The worker's Celery node name (a remote-control command for it alone names it)."""
        return stack.node_name(self.worker.name)

    def nodes(self) -> tuple[str, ...]:
        return tuple(stack.node_name(process.name) for process in (self.worker, self.sender) if process)

    def pids(self) -> list[int]:
        return [pid for process in (self.worker, self.sender) if process for pid in process.pids()]

    def stop(self) -> None:
        for process in (self.sender, self.worker):
            if process:
                process.stop()


class _Forms(HTMLParser):
    """The forms of an HTML page: {action: {field: value}} as a browser would send them unchanged."""

    def __init__(self):
        super().__init__()
        self.forms: dict[str, dict] = {}
        self.form = self.select = self.text = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        name = attrs.get("name")
        if tag == "form":
            self.form = self.forms.setdefault(attrs.get("action") or "", {})
        elif self.form is None or (tag != "option" and not name):
            return
        elif tag == "input" and attrs.get("type") not in ("submit", "file", "checkbox", "radio"):
            self.form[name] = attrs.get("value") or ""
        elif tag == "input" and attrs.get("type") in ("checkbox", "radio") and "checked" in attrs:
            self.form[name] = attrs.get("value", "on")
        elif tag == "select":
            self.select = name
        elif tag == "option" and self.select and ("selected" in attrs or self.select not in self.form):
            self.form[self.select] = attrs.get("value", "")
        elif tag == "textarea":
            self.text = name
            self.form[name] = ""

    def handle_data(self, data):
        if self.text:
            self.form[self.text] += data.removeprefix("\n") if not self.form[self.text] else data

    def handle_endtag(self, tag):
        if tag == "form":
            self.form = None
        elif tag == "select":
            self.select = None
        elif tag == "textarea":
            self.text = None


class Admin:
    """A staff member's browser on our admin, sending a page's form as its button does. The cookies are
    kept by hand: the production settings mark them Secure, and the bench speaks plain HTTP."""

    def __init__(self, base: str, username: str = "", password: str = "", *, cookies: dict | None = None):
        self.base, self.cookies = base, dict(cookies or {})
        self.http = requests.Session()
        self.http.trust_env = False
        if not cookies:
            self.send("/admin/login/", "/admin/login/", {"username": username, "password": password})

    def get(self, path: str) -> requests.Response:
        answer = self.http.get(urljoin(self.base, path), cookies=self.cookies, allow_redirects=False, timeout=60)
        self._keep(answer)
        return answer

    def _keep(self, answer: requests.Response) -> None:
        self.cookies.update(answer.cookies.get_dict())
        self.http.cookies.clear()

    def send(self, page: str, action: str, values: dict, files=None, *, check: bool = True) -> requests.Response:
        """The form of `page` whose action ends with `action`, its fields as drawn with `values` over them,
        sent; the answer must be the redirect that follows a done action (unless not `check`)."""
        parser = _Forms()
        parser.feed(self.get(page).text)
        target = next((url for url in parser.forms if url.endswith(action)), None)
        if target is None:
            raise RuntimeError(f"no form sending to {action} on {page}")
        data = {**parser.forms[target], **values}
        url = urljoin(urljoin(self.base, page), target)
        answer = self.http.post(url, data=data, files=files, cookies=self.cookies, allow_redirects=False, timeout=60)
        self._keep(answer)
        if check and answer.status_code != 302:
            raise RuntimeError(f"{action} on {page} answered {answer.status_code}: {answer.text[:300]}")
        return answer

    def order_page(self, transaction_id: str) -> str:
        """The path of the order's page in the staff's queue, found by its transaction id."""
        listing = self.get(f"/admin/fulfillment/stafforder/?q={transaction_id}").text
        found = re.search(r'href="(/admin/fulfillment/stafforder/\d+/change/)', listing)
        if not found:
            raise RuntimeError(f"the order of {transaction_id} is not in the staff's queue")
        return found[1]
