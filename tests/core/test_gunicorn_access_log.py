"""gunicorn's access log, with the project's gunicorn.conf.py, never holds a query string."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.helpers.ports import free_port

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
        for _ in range(100):
            try:
                response = requests.get(f"http://127.0.0.1:{port}/v1/origins/o-1?partnerAccessToken={token}", timeout=2)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        assert response.status_code == 200
        for _ in range(50):
            if log.exists() and log.read_text():
                break
            time.sleep(0.1)
    finally:
        server.terminate()
        server.wait(10)
    text = log.read_text()
    assert "/v1/origins/o-1" in text
    assert token not in text
    assert "partnerAccessToken" not in text
