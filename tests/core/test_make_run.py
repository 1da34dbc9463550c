"""`make run`'s foreground (bin/run): the links printed last, once every one answers; Ctrl-C ends with
status 0, so make reports no error; the superuser hint names a command that works outside the venv.

A real honcho runs a real web server (Python's http.server serving the links' paths after a delay);
Ctrl-C is sent as the terminal sends it: SIGINT to the whole foreground process group.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.helpers.ports import free_port, port_answers

ROOT = Path(__file__).resolve().parents[2]
HONCHO = Path(sys.executable).with_name("honcho")
BANNER_END = "Ctrl-C stops everything."


def site(root: Path) -> Path:
    """The paths bin/run probes, each a file the web server answers 200 for."""
    for path in ("sandbox/host", "admin", "healthz/ready", "metrics"):
        (root / path).mkdir(parents=True, exist_ok=True)
        (root / path / "index.html").write_text("ok")
    (root / "metrics").rename(root / "metrics-dir")
    (root / "metrics").write_text("# figures\n")
    return root


def read_until(process, marker: str, timeout: float) -> list[str]:
    """The lines `process` printed up to the one holding `marker` (read in a thread: no buffering trap)."""
    lines, found = [], threading.Event()

    def reader():
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if marker in line:
                found.set()

    threading.Thread(target=reader, daemon=True).start()
    assert found.wait(timeout), f"{marker!r} not printed within {timeout} s:\n" + "\n".join(lines)
    return lines


@contextlib.contextmanager
def bin_run(procfile: Path, url: str):
    """`bin/run` under honcho on `procfile`, its output piped (`read_until`), in a process group of its
    own as a terminal's foreground job is; killed with its group at the end if still running."""
    run = subprocess.Popen(
        [sys.executable, str(ROOT / "bin" / "run"), str(HONCHO), str(procfile), url],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield run
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()


def test_the_links_come_last_once_they_answer_and_ctrl_c_ends_with_status_0(tmp_path):
    port = free_port()
    root = site(tmp_path / "site")
    procfile = tmp_path / "Procfile"
    # The web process starts answering only after 2 s, as Django's runserver does after its checks.
    procfile.write_text(
        f"web: sleep 2 && echo web-listening && exec {sys.executable} -m http.server {port} "
        f"--bind 127.0.0.1 --directory {root}\n"
    )
    with bin_run(procfile, f"http://127.0.0.1:{port}/") as run:
        lines = read_until(run, BANNER_END, timeout=60)
        ready = lines.index("  Ready:")
        # The processes' start-up lines came first; the links below them, each answering by now.
        assert any("web-listening" in line for line in lines[:ready])
        assert port_answers(port)
        banner = "\n".join(lines[ready:])
        assert f"http://127.0.0.1:{port}/sandbox/host/" in banner
        assert "Staff login (orders, connector)" in banner and "staff.demo / staff-demo-password-1" in banner
        # replacing the demo connection: one connection per product, and how to move it
        assert "one connection per product" in banner and "Move a product to" in banner
        assert "superuser: .venv/bin/python manage.py createsuperuser" in banner

        os.killpg(run.pid, signal.SIGINT)  # Ctrl-C
        assert run.wait(timeout=30) == 0
    assert not port_answers(port)  # honcho stopped the web process


def test_a_process_that_dies_on_its_own_passes_its_failure_on(tmp_path):
    procfile = tmp_path / "Procfile"
    procfile.write_text("web: sleep 1 && exit 3\n")
    run = subprocess.run(
        [sys.executable, str(ROOT / "bin" / "run"), str(HONCHO), str(procfile), f"http://127.0.0.1:{free_port()}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0
    assert "Ready:" not in run.stdout


def test_the_links_wait_for_the_worker_and_come_after_its_banner(tmp_path):
    port = free_port()
    root = site(tmp_path / "site")
    procfile = tmp_path / "Procfile"
    # The web answers at once; the worker prints its banner, then, 3 s later, Celery's ready line.
    procfile.write_text(
        f"web: exec {sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {root}\n"
        "worker: echo ' -------------- celery@demo v5 (banner)' && sleep 3"
        " && echo '[INFO/MainProcess] celery@demo ready.' && exec sleep 600\n"
    )
    with bin_run(procfile, f"http://127.0.0.1:{port}") as run:
        lines = read_until(run, BANNER_END, timeout=60)
        ready = lines.index("  Ready:")
        banner_at = next(n for n, line in enumerate(lines) if "(banner)" in line)
        worker_ready_at = next(n for n, line in enumerate(lines) if "celery@demo ready." in line)
        assert banner_at < worker_ready_at < ready  # the links last, after the worker's start-up
        os.killpg(run.pid, signal.SIGINT)
        assert run.wait(timeout=30) == 0


def test_the_links_wait_for_the_sender_too(tmp_path):
    """A Procfile with a sender (the worker of the events' queue) beside the worker: the links come after
    both are ready, whichever is last, never in the middle of the sender's start-up."""
    port = free_port()
    root = site(tmp_path / "site")
    procfile = tmp_path / "Procfile"
    procfile.write_text(
        f"web: exec {sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {root}\n"
        "worker: echo '[INFO/MainProcess] celery@demo ready.' && exec sleep 600\n"
        "sender: sleep 3 && echo '[INFO/MainProcess] sender@demo ready.' && exec sleep 600\n"
    )
    with bin_run(procfile, f"http://127.0.0.1:{port}") as run:
        lines = read_until(run, BANNER_END, timeout=60)
        ready = lines.index("  Ready:")
        sender_ready_at = next(n for n, line in enumerate(lines) if "sender@demo ready." in line)
        worker_ready_at = next(n for n, line in enumerate(lines) if "celery@demo ready." in line)
        assert worker_ready_at < sender_ready_at < ready
        os.killpg(run.pid, signal.SIGINT)
        assert run.wait(timeout=30) == 0
