"""One rule for which proxies are believed, in every server we ship config for: gunicorn's
`forwarded_allow_ips` follows TRUSTED_PROXIES (gunicorn.conf.py), so `X-Forwarded-Proto: https` from
loopback is not believed unless TRUSTED_PROXIES names loopback (gunicorn's own default believed it,
and decided the scheme before our middleware could)."""

import http.client
import subprocess
import sys

import pytest

from tests.helpers.ports import free_port, port_answers
from tests.helpers.processes import PRODUCTION, ROOT, django_env
from tests.helpers.waiting import wait_for

PORT = free_port()  # this process's own: runs and their workers side by side never share it


def get_login(forwarded_proto: str):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=90)  # the worker may still be starting
    conn.request("GET", "/admin/login/", headers={"Host": "partner.example.com", "X-Forwarded-Proto": forwarded_proto})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, response.getheader("Location", "")


@pytest.fixture
def gunicorn(tmp_path):
    servers = []

    def start(**env):
        environment = django_env(
            {
                **PRODUCTION,
                "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
                "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"),
                **env,
            }
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{PORT}", "--workers", "1"],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        servers.append(process)

        def answers():
            assert process.poll() is None, process.stderr.read().decode()
            return port_answers(PORT)

        wait_for(answers, timeout=60, message="gunicorn to start")
        return process

    yield start
    for process in servers:
        process.terminate()
        process.wait(timeout=30)


def test_forwarded_proto_from_loopback_is_not_believed_unless_trusted(gunicorn):
    server = gunicorn()  # TRUSTED_PROXIES unset
    status, location = get_login("https")
    assert status == 301 and location.startswith("https://"), (status, location)  # still plain http to us
    server.terminate()
    server.wait(timeout=30)
    wait_for(lambda: not port_answers(PORT), timeout=30, message="the first gunicorn's port to close")

    gunicorn(TRUSTED_PROXIES="127.0.0.1")
    status, _ = get_login("https")
    assert status != 301  # a trusted proxy's word is believed
    assert get_login("http")[0] == 301
