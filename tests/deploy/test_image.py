"""The image (Containerfile), built with podman and run from its own file system.

Built on a local stand-in for its base (bin/image-base: Debian 12 with its Python 3.11, as
python:3.11-slim-bookworm), then, from the image's root file system mounted read-only with only
its declared folders writable (tests/helpers/image.py), as the image's non-root user with its
ENV and entry point:
- `migrate` creates the schema in a PostgreSQL database of this test's own;
- `web` (gunicorn, gunicorn.conf.py) and `worker` (Celery, prefork) run against a Redis of the
  test's own, the sandbox mounted in the web process by its environment (this test only);
- an order placed through the sandbox's host API is completed: its one PATCH accepted;
- a staff-worked order is worked as staff work it, over HTTP: the admin's login, take, a document
  uploaded to the web process and a final delivery confirmed; the worker, which shares only the
  documents folder with the web process, sends that document: the platform receives its bytes;
- every process of theirs runs as the image's user, none as root; and the image's own
  HEALTHCHECK passes against the web server.

One test, because building and starting the stack is most of its time (about a minute once the
base is cached; the first run also makes the base, about a minute more).
"""

import os
import re
import secrets
import shutil
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
import requests

from tests.helpers.image import (
    IMAGE_TAG,
    ImageRoot,
    image_build,
    image_config,
    image_keep,
    image_mount,
    image_unmount,
    podman_missing_reason,
    process_group_stop,
    process_tree_uids,
)
from tests.helpers.ports import free_port, port_answers
from tests.helpers.products import DEMO_PASSWORD
from tests.helpers.waiting import wait_for

# Ports, the image's tag and the database of this run's own: runs (and a run's workers) side by side
# never share them.
WEB_PORT = free_port()
REDIS_PORT = free_port()
PG_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
SIGNING_SECRET = "image-test-signing-secret"  # noqa: S105 - this test's own, not a real secret
STAFF_USERNAME = "appraiser.image"
STAFF_PASSWORD = secrets.token_urlsafe(18)
REPORT = b"%PDF-1.7\n% the image test's appraisal report, uploaded by staff\n%%EOF\n"
DOCUMENTS = "/app/documents"  # the folder web and worker share (Containerfile, compose.yaml)

_missing = podman_missing_reason()
pytestmark = [
    pytest.mark.image,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(_missing is not None, reason=f"the image test needs podman: {_missing}"),
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed"),
]


@pytest.fixture(scope="module")
def image():
    from django.conf import settings

    tag = image_build(f"{IMAGE_TAG}-{settings.RUN_ID}")
    try:
        yield image_config(tag), tag
    finally:
        image_keep(tag)


@pytest.fixture
def database():
    """A PostgreSQL database of this test's own, dropped after."""
    if not port_answers(5432):
        pytest.skip("PostgreSQL does not answer on 127.0.0.1:5432")
    from django.conf import settings

    name = f"partner_image_{settings.RUN_ID}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def redis_server(tmp_path):
    """A Redis of this test's own (broker and cache), on one of its ports."""
    if port_answers(REDIS_PORT):
        pytest.fail(f"port {REDIS_PORT} is taken: the image test's Redis cannot start")
    process = subprocess.Popen(
        ["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: port_answers(REDIS_PORT), timeout=20, message="the test's redis-server")
        yield f"redis://127.0.0.1:{REDIS_PORT}"
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def image_root(image, tmp_path):
    config, tag = image
    root = image_mount(tag)
    try:
        yield ImageRoot(root, config, tmp_path / "image")
    finally:
        image_unmount(tag)


def production_env(database: str, redis: str) -> dict:
    """What a deployment sets (docs/deployment.md), with values of this test's own, over plain HTTP."""
    base = f"http://127.0.0.1:{WEB_PORT}"
    from cryptography.fernet import Fernet

    return {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
        "DATABASE_URL": database,
        "CELERY_BROKER_URL": f"{redis}/0",
        "CELERY_RESULT_BACKEND": f"{redis}/0",
        "CACHE_URL": f"{redis}/1",
        "PUBLIC_BASE_URL": base,
        "HOST_ORIGINS": base,
        "SVC_BASE_URL": f"{base}/sandbox",
        "SVC_TOKEN_URL": f"{base}/sandbox/oauth2/v1/token",
        "SVC_CLIENT_SECRET": "image-test-client-secret",  # the sandbox accepts the configured client
        "SVC_SIGNING_SECRETS": SIGNING_SECRET,
        "PORT": str(WEB_PORT),
        "WEB_CONCURRENCY": "2",
        "CELERY_WORKER_CONCURRENCY": "4",
        "LOG_LEVEL": "INFO",
        # Our company, not the demo's, and documents in the one folder web and worker both mount, as
        # compose's `documents` volume: the servers refuse to start otherwise (partner.E013, E015).
        "PARTNER_NAME": "Image Test Appraisals",
        "PARTNER_ADDRESS": "1 Test Road",
        "PARTNER_CITY": "Portland",
        "PARTNER_STATE": "OR",
        "PARTNER_POSTAL_CODE": "97201",
        "PARTNER_PHONE": "503-555-0199",
        "PARTNER_EMAIL": "orders@image-test.example",
        "DOCUMENT_STORAGE": "filesystem",
        "MEDIA_ROOT": DOCUMENTS,
        "DOCUMENTS_SINGLE_HOST": "true",
    }


def shared_documents(image_root) -> Path:
    """The host folder web and worker both mount at /app/documents (compose's `documents` volume),
    owned by the image's user."""
    folder = image_root.work / "documents"
    folder.mkdir(parents=True, exist_ok=True)
    os.chown(folder, *image_root.config.uid_gid)
    return folder


def test_the_image_migrates_serves_and_completes_an_order_as_its_own_user(image, image_root, database, redis_server):
    config, _tag = image
    uid, gid = config.uid_gid
    assert uid != 0 and gid != 0, f"the image runs as {config.user!r}: root"
    assert config.env["DJANGO_SETTINGS_MODULE"] == "config.settings.production"
    assert config.volumes == ["/app/var", "/tmp"]
    assert config.healthcheck[-2:] == ["/app/bin/entrypoint", "healthcheck"]

    env = production_env(database, redis_server)
    # The sandbox in the processes that need it, for this test only (never in the image's ENV).
    sandbox = {"SANDBOX_ENABLED": "true"}
    assert "SANDBOX_ENABLED" not in config.env

    # The one-off commands, each with folders of its own as a container's would be.
    code, log = image_root.run("migrate", ["migrate"], {**env, **sandbox})
    assert code == 0, log
    with psycopg.connect(database) as conn:
        applied = conn.execute("SELECT count(*) FROM django_migrations WHERE app = 'fulfillment'").fetchone()[0]
    assert applied > 0, log
    seed_volumes = image_root.volume_dirs("seed")
    for argv, stdin in (
        (["manage", "sandbox_seed", "--listing", "/app/var/sandbox-products.json"], None),
        (["manage", "products_import", "/app/var/sandbox-products.json"], None),
        # The lender's partner account, its password on standard input (as `make demo` does).
        (["manage", "partner_account", "lender.demo", "--company", "DEMO01"], f"{DEMO_PASSWORD}\n"),
        # The staff login that works the appraisal, its password on standard input.
        (["manage", "staff_account", STAFF_USERNAME, "--email", "appraiser@image-test.example"], f"{STAFF_PASSWORD}\n"),
    ):
        code, log = image_root.run("seed", argv, {**env, **sandbox}, volumes=seed_volumes, input=stdin)
        assert code == 0, log

    documents = shared_documents(image_root)
    web = image_root.popen(
        "web",
        ["web"],
        {**env, **sandbox},
        log=image_root.work / "web.log",
        volumes={**image_root.volume_dirs("web"), DOCUMENTS: documents},
    )
    worker = None
    try:
        base = f"http://127.0.0.1:{WEB_PORT}"
        wait_for(
            lambda: web.poll() is None and _answers(f"{base}/healthz/live"),
            timeout=90,
            message=f"the image's web server ({(image_root.work / 'web.log')})",
        )
        assert web.poll() is None, (image_root.work / "web.log").read_text()
        # The image's HEALTHCHECK, run as the image would run it.
        code, log = image_root.run("healthcheck", [*config.healthcheck[1:]], env)
        assert code == 0, log
        # The guest library is inside, served by the application (WhiteNoise): nothing fetched.
        files = sorted((image_root.image_root / "app/staticfiles/vendor/em-ssf-guest").rglob("*.js"))
        assert files, "the guest library is not in the image's static files"
        script = requests.get(f"{base}/static/vendor/em-ssf-guest/{files[0].name}", timeout=5)
        assert script.status_code == 200, f"/static/vendor/em-ssf-guest/{files[0].name}: {script.status_code}"

        # The worker: production settings but for the sandbox's upload slots on the loopback.
        worker = image_root.popen(
            "worker",
            ["worker"],
            {**env, "PYTHONPATH": "/mnt", "DJANGO_SETTINGS_MODULE": "image_loopback"},
            log=image_root.work / "worker.log",
            volumes={**image_root.volume_dirs("worker"), DOCUMENTS: documents},
            extra_mounts={"/mnt": Path(__file__).parent / "image_settings"},
        )

        transaction_id = _order_placed(base)
        wait_for(
            lambda: _order_status(database, transaction_id) in ("REQUEST_COMPLETED", "FAILED"),
            timeout=120,
            message=f"the order completed (worker log: {image_root.work / 'worker.log'})",
        )
        assert _order_status(database, transaction_id) == "REQUEST_COMPLETED", (
            image_root.work / "worker.log"
        ).read_text()[-4000:]
        platform_view = _platform_transaction(base, transaction_id)
        assert len(platform_view["patches"]) == 1, platform_view

        # A staff-worked order: the document reaches the web process, the worker sends it.
        appraisal = _order_placed(base, product_name="appraisal")
        wait_for(
            lambda: len(_platform_transaction(base, appraisal)["patches"]) >= 1,
            timeout=120,
            message=f"the appraisal acknowledged (worker log: {image_root.work / 'worker.log'})",
        )
        _staff_deliver(base, _order_id(database, appraisal))
        wait_for(
            lambda: _order_status(database, appraisal) in ("REQUEST_COMPLETED", "FAILED"),
            timeout=120,
            message=f"the appraisal delivered (worker log: {image_root.work / 'worker.log'})",
        )
        assert _order_status(database, appraisal) == "REQUEST_COMPLETED", (image_root.work / "worker.log").read_text()[
            -4000:
        ]
        final = _platform_transaction(base, appraisal)["patches"][-1]
        assert final["resources"] == ["report.pdf"], final
        assert _uploads(database, appraisal) == [("report.pdf", REPORT)]
        # Stored in the folder the two processes share (not in either one's own /app/var).
        stored = [path.read_bytes() for path in (documents / "documents" / appraisal).glob("*") if path.is_file()]
        assert stored == [REPORT], stored

        # Every process of the web server and the worker (gunicorn's master and its 2 workers; Celery's
        # one process, its tasks in threads) runs as the image's user.
        for process, least in ((web, 3), (worker, 1)):
            uids = process_tree_uids(process.pid)
            assert len(uids) >= least, uids
            assert all(set(ids) == {uid} for ids in uids.values()), uids
        # The settings' pool, as CELERY_WORKER_CONCURRENCY sizes it (Celery's banner says which).
        assert "concurrency: 4 (thread)" in (image_root.work / "worker.log").read_text()
    finally:
        for process in (worker, web):
            if process is not None:
                process_group_stop(process, timeout=40)
    # A clean stop on SIGTERM (a container's stop): gunicorn and Celery's warm shutdown exit 0.
    assert web.returncode == 0, (image_root.work / "web.log").read_text()[-3000:]
    assert worker.returncode == 0, (image_root.work / "worker.log").read_text()[-3000:]

    # Nothing was written outside the declared folders: everything else was mounted read-only, as
    # even root finds, and what they wrote is in their own /app/var and /tmp.
    code, log = image_root.run("readonly", ["/bin/touch", "/app/written"], {}, as_root=True)
    assert code != 0 and "Read-only file system" in log, log
    written = sorted(
        str(path.relative_to(image_root.work)) for path in image_root.work.glob("*/app-var/**/*") if path.is_file()
    )
    assert any("web/app-var/metrics/" in path for path in written), written


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False


def _order_placed(base: str, product_name: str = "address-verification") -> str:
    """As the host does (the sandbox's host API, over HTTP): an origin, then a transaction on it;
    the sandbox sends its signed webhook to the web server."""
    context = requests.get(f"{base}/sandbox/host-api/context", timeout=10).json()
    user = next(user for user in context["users"] if user["username"] == "lender.demo")
    product = next(product for product in context["products"] if product["name"] == product_name)
    loan = context["loans"][2]
    origin = requests.post(
        f"{base}/sandbox/host-api/origins",
        json={"user_id": user["id"], "loan_id": loan["id"], "product_id": product["id"]},
        timeout=10,
    )
    assert origin.status_code == 200, origin.text
    created = requests.post(
        f"{base}/sandbox/host-api/transactions", json={"origin_id": origin.json()["id"], "request": {}}, timeout=10
    )
    assert created.status_code == 200, created.text
    return created.json()["transactionId"]


class _StaffBrowser:
    """A staff member's browser over plain HTTP: the production settings mark the session and CSRF
    cookies Secure, which a browser keeps but sends only over HTTPS, so they are kept and sent here by
    hand, with the CSRF token read from each page's form, as the browser would post it."""

    def __init__(self, base: str):
        self.base = base
        self.cookies: dict[str, str] = {}
        self.token = ""

    def _request(self, method: str, path: str, **kwargs) -> requests.Response:
        cookie = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
        response = requests.request(
            method, self.base + path, headers={"Cookie": cookie}, allow_redirects=False, timeout=30, **kwargs
        )
        self.cookies.update(response.cookies.get_dict())
        return response

    def get(self, path: str) -> requests.Response:
        response = self._request("GET", path)
        assert response.status_code == 200, f"GET {path}: {response.status_code}"
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.text)
        self.token = found.group(1) if found else self.token
        return response

    def post(self, path: str, data: dict, files=None) -> requests.Response:
        response = self._request("POST", path, data={"csrfmiddlewaretoken": self.token, **data}, files=files)
        assert response.status_code in (200, 302), f"POST {path}: {response.status_code} {response.text[:500]}"
        return response


def _staff_deliver(base: str, order_id: int) -> None:
    """As staff work the order in the admin: sign in, take it, upload the report, send the final
    delivery and confirm it."""
    staff = _StaffBrowser(base)
    staff.get("/admin/login/")
    signed_in = staff.post("/admin/login/", {"username": STAFF_USERNAME, "password": STAFF_PASSWORD, "next": "/admin/"})
    assert signed_in.status_code == 302 and "sessionid" in staff.cookies, signed_in.text[:2000]
    order_page = f"/admin/fulfillment/stafforder/{order_id}"
    staff.get(f"{order_page}/change/")
    staff.post(f"{order_page}/take/", {})
    staff.get(f"{order_page}/change/")
    staff.post(
        f"{order_page}/documents/",
        {"upload-once": uuid.uuid4().hex},
        files=[("upload-files", ("report.pdf", REPORT, "application/pdf"))],
    )
    page = staff.get(f"{order_page}/change/").text
    assert "report.pdf" in page, "the uploaded report is not on the order's page"
    final = {"deliver-kind": "final", "deliver-partner_status": "Appraisal report delivered"}
    asked = staff.post(f"{order_page}/deliver/", {**final, "deliver-once": uuid.uuid4().hex})
    assert asked.status_code == 200 and "report.pdf" in asked.text, asked.text[:2000]
    sent = staff.post(f"{order_page}/deliver/", {**final, "deliver-once": uuid.uuid4().hex, "confirmed": "1"})
    assert sent.status_code == 302, sent.text[:2000]


def _order_id(database: str, transaction_id: str) -> int:
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT id FROM fulfillment_order WHERE transaction_id = %s", [transaction_id]).fetchone()
    return row[0]


def _uploads(database: str, transaction_id: str) -> list[tuple[str, bytes]]:
    """What the platform received in the transaction's upload slots: each document's name and bytes."""
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT name, content FROM sandbox_uploadslot WHERE transaction_id = %s AND uploaded_at IS NOT NULL",
            [transaction_id],
        ).fetchall()
    return [(name, bytes(content)) for name, content in rows]


def _order_status(database: str, transaction_id: str) -> str | None:
    with psycopg.connect(database) as conn:
        query = "SELECT status FROM fulfillment_order WHERE transaction_id = %s"
        row = conn.execute(query, [transaction_id]).fetchone()
    return row[0] if row else None


def _platform_transaction(base: str, transaction_id: str) -> dict:
    context = requests.get(f"{base}/sandbox/host-api/context", timeout=10).json()
    return next(row for row in context["transactions"] if row["id"] == transaction_id)
