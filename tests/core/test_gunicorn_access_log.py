"""gunicorn's access log, with the project's gunicorn.conf.py, never holds a query string."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from tests.helpers.ports import free_port
from tests.helpers.waiting import answered, wait_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("gunicorn", path=str(Path(sys.executable).parent)) is None, reason="needs gunicorn")
def test_partner_access_token_in_the_query_is_not_logged(tmp_path):
    token = "query-token-never-logged-98765"  # noqa: S105
    log = tmp_path / "access.log"
    port = free_port()
    # A bare WSGI application: the point is gunicorn's configuration, not Django's answer.
    app = tmp_path / "hello.py"
    app.write_text("def application(environ, start):\n    start('200 OK', [])\n    return [b'ok']\n")
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "--config",
            str(ROOT / "gunicorn.conf.py"),
            "--chdir",
            str(tmp_path),
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "1",
            "--access-logfile",
            str(log),
            "hello:application",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/v1/origins/o-1?partnerAccessToken={token}"
        response = answered(lambda: requests.get(url, timeout=2), message="gunicorn to answer")
        assert response.status_code == 200
        wait_for(lambda: log.exists() and log.read_text(), timeout=30, message="the access log's line")
    finally:
        server.terminate()
        server.wait(10)
    text = log.read_text()
    assert "/v1/origins/o-1" in text
    assert token not in text
    assert "partnerAccessToken" not in text
